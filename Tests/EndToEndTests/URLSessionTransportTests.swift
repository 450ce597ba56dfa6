import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTP
@testable import Workloads
import XCTest

/// The URLSession client `bench transport` compares with the product's own: its errors map onto the same cases.
final class URLSessionTransportTests: XCTestCase {
    func testURLErrorMapping() {
        XCTAssertEqual(URLSessionTransport.map(URLError(.timedOut)), .timeout)
        XCTAssertEqual(URLSessionTransport.map(URLError(.networkConnectionLost)), .connectionReset)
        XCTAssertEqual(URLSessionTransport.map(CancellationError()), .cancelled)
        guard case .tlsFailure = URLSessionTransport.map(URLError(.serverCertificateUntrusted)) else {
            return XCTFail("certificate errors must surface as TLS failures")
        }
    }
}

import Foundation
import XCTest
@testable import HTTP

/// The request head the socket transport writes: request target, Host, the caller's headers,
/// and framing that is always ours.
final class RequestHeadTests: XCTestCase {
    private func head(_ method: String, _ url: String, headers: HTTPHeaderFields = [], body: [UInt8] = [],
                      host: String = "127.0.0.1", port: Int = 8080, defaultPort: Int = 80) throws -> String {
        let request = HTTPClientRequest(method: method, url: URL(string: url)!, headers: headers, body: body)
        return String(decoding: try SocketHTTPTransport.serializeHead(request, host: host, port: port, defaultPort: defaultPort), as: UTF8.self)
    }

    /// RFC 9110 tchar, byte by byte: letters, digits and fifteen symbols; nothing else.
    func testTokenCharactersAreExactlyRFC9110s() {
        let symbols = Set("!#$%&'*+-.^_`|~".utf8)
        for byte in UInt8.min...UInt8.max {
            let expected = (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || symbols.contains(byte)
            XCTAssertEqual(HTTPHead.isTokenChar(byte), expected, "byte \(byte)")
        }
    }

    func testAPostCarriesItsTargetHostHeadersAndLength() throws {
        XCTAssertEqual(try head("POST", "http://127.0.0.1:8080/verifyReceipt", headers: [("Content-Type", "application/json")], body: Array("{}".utf8)),
                       "POST /verifyReceipt HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n")
    }

    func testTheTargetKeepsItsPercentEncodingAndQuery() throws {
        XCTAssertEqual(try head("GET", "https://api.example.com/inApps/v1/history/1%2F2?revision=a%20b&sort=ASCENDING", host: "api.example.com", port: 443, defaultPort: 443),
                       "GET /inApps/v1/history/1%2F2?revision=a%20b&sort=ASCENDING HTTP/1.1\r\nHost: api.example.com\r\n\r\n")
        XCTAssertEqual(try head("GET", "http://localhost:8080"), "GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n")
    }

    func testAnIPv6HostIsBracketedAndACallersHostWins() throws {
        XCTAssertEqual(try head("GET", "http://[::1]:9000/x", host: "::1", port: 9000), "GET /x HTTP/1.1\r\nHost: [::1]:9000\r\n\r\n")
        XCTAssertEqual(try head("GET", "http://127.0.0.1:8080/x", headers: [("host", "example.test")]),
                       "GET /x HTTP/1.1\r\nhost: example.test\r\n\r\n")
    }

    func testFramingHeadersAreAlwaysOurs() throws {
        XCTAssertEqual(try head("PUT", "http://127.0.0.1:8080/x", headers: [("content-LENGTH", "99"), ("Transfer-Encoding", "chunked")]),
                       "PUT /x HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Length: 0\r\n\r\n")
        XCTAssertEqual(try head("DELETE", "http://127.0.0.1:8080/x"), "DELETE /x HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n")
    }

    func testInjectionIsRefused() {
        XCTAssertThrowsError(try head("GET", "http://127.0.0.1:8080/x", headers: [("X-A", "1\r\nX-B: 2")]))
        XCTAssertThrowsError(try head("GET", "http://127.0.0.1:8080/x", headers: [("X A", "1")]))
        XCTAssertThrowsError(try head("GET", "http://127.0.0.1:8080/x", headers: [("", "1")]))
        XCTAssertThrowsError(try head("GE T", "http://127.0.0.1:8080/x"))
        XCTAssertThrowsError(try head("", "http://127.0.0.1:8080/x"))
    }
}

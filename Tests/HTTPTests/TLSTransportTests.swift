import AppleSim
import Foundation
import HTTP
import XCTest

/// https through the socket transport against a real TLS server on loopback: verified chains,
/// host names checked, keep-alive over TLS, and every failure a `tlsFailure`.
final class TLSTransportTests: XCTestCase {
    private var certificates: LoopbackTLSCertificates!

    override func setUpWithError() throws { certificates = try LoopbackTLSCertificates.make() }
    override func tearDown() { certificates.remove() }

    private func post(_ transport: SocketHTTPTransport, host: String = "localhost", port: Int, body: [UInt8]) async throws -> HTTPClientResponse {
        try await transport.send(HTTPClientRequest(method: "POST", url: URL(string: "https://\(host):\(port)/verifyReceipt")!,
                                                   headers: [("Content-Type", "application/json")], body: body), timeout: .seconds(10))
    }

    func testRequestsOverVerifiedTLSReuseOneConnection() async throws {
        let server = try LoopbackTLSServer(certificate: certificates.serverCertificate, key: certificates.serverKey)
        let transport = try SocketHTTPTransport(configuration: .init(trustedCertificatesFile: certificates.caFile))
        for index in 0..<5 {
            let response = try await post(transport, port: server.port, body: Array("{\"n\":\(index)}".utf8))
            XCTAssertEqual(response.status, 200)
            XCTAssertEqual(String(decoding: response.body, as: UTF8.self), "echo:{\"n\":\(index)}")
        }
        XCTAssertEqual(server.completedHandshakes, 1, "keep-alive: one handshake for five requests")
        // Bodies larger than one TLS record (16 KiB) both ways; the address form is checked against the IP SAN.
        let large = [UInt8](repeating: UInt8(ascii: "x"), count: 300_000)
        let echoed = try await post(transport, host: "127.0.0.1", port: server.port, body: large)
        XCTAssertEqual(echoed.body.count, large.count + 5)
        await transport.shutdown()
        server.stop()
    }

    func testManyConcurrentHandshakes() async throws {
        let server = try LoopbackTLSServer(certificate: certificates.serverCertificate, key: certificates.serverKey)
        let transport = try SocketHTTPTransport(configuration: .init(trustedCertificatesFile: certificates.caFile))
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<100 {
                let url = URL(string: "https://localhost:\(server.port)/verifyReceipt")!
                group.addTask {
                    try await transport.send(HTTPClientRequest(method: "POST", url: url, body: Array("\(index)".utf8)), timeout: .seconds(10)).status
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        XCTAssertEqual(statuses, Array(repeating: 200, count: 100))
        await transport.shutdown()
        server.stop()
    }

    func testUntrustedOrMisnamedCertificatesAreRefused() async throws {
        let server = try LoopbackTLSServer(certificate: certificates.serverCertificate, key: certificates.serverKey)
        let stranger = try LoopbackTLSServer(certificate: certificates.strangerCertificate, key: certificates.strangerKey)
        // The private CA is not in the system store; the stranger is signed by nobody we trust.
        let systemTrust = try SocketHTTPTransport()
        let privateTrust = try SocketHTTPTransport(configuration: .init(trustedCertificatesFile: certificates.caFile))
        let strangerTrust = try SocketHTTPTransport(configuration: .init(trustedCertificatesFile: certificates.strangerCertificate))
        let cases: [(String, SocketHTTPTransport, String, Int)] = [
            ("private CA with the system store", systemTrust, "localhost", server.port),
            ("self-signed stranger", privateTrust, "localhost", stranger.port),
            ("trusted certificate for another name", strangerTrust, "127.0.0.1", stranger.port),
        ]
        for (label, transport, host, port) in cases {
            do {
                _ = try await post(transport, host: host, port: port, body: Array("secret-body".utf8))
                XCTFail("\(label): must be refused")
            } catch let error as HTTPClientError {
                guard case .tlsFailure(let why) = error else { return XCTFail("\(label): \(error)") }
                XCTAssertTrue(why.contains("certificate"), "\(label): \(why)")
            }
        }
        // The same stranger is fine when it is trusted and named as it says.
        let trusted = try await post(strangerTrust, host: "localhost", port: stranger.port, body: Array("ok".utf8))
        XCTAssertEqual(trusted.status, 200)
        for transport in [systemTrust, privateTrust, strangerTrust] { await transport.shutdown() }
        server.stop()
        stranger.stop()
    }

    func testMissingTrustFileIsATLSFailureNotACrash() async throws {
        let server = try LoopbackTLSServer(certificate: certificates.serverCertificate, key: certificates.serverKey)
        let transport = try SocketHTTPTransport(configuration: .init(trustedCertificatesFile: "/nonexistent/ca.pem"))
        do {
            _ = try await post(transport, port: server.port, body: [])
            XCTFail("must fail")
        } catch let error as HTTPClientError {
            guard case .tlsFailure = error else { return XCTFail("\(error)") }
        }
        await transport.shutdown()
        server.stop()
    }
}

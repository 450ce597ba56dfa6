import Foundation
import XCTest
@testable import HTTP

final class SocketHTTPTransportTests: XCTestCase {
    private func request(_ port: Int, _ path: String = "/") -> HTTPClientRequest {
        HTTPClientRequest(url: url(port, path))
    }

    func testReusesKeepAliveConnection() async throws {
        // The raw server accepts exactly one connection: a second connection would never be answered.
        let server = try RawServer(script: { socket in
            for i in 0..<3 {
                guard try socket.readRequest() != nil else { return }
                try socket.send("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n\(i)")
            }
        })
        let transport = try SocketHTTPTransport()
        var bodies: [String] = []
        for _ in 0..<3 {
            bodies.append(try await transport.send(request(server.port), timeout: .seconds(5)).text)
        }
        XCTAssertEqual(bodies, ["0", "1", "2"])
        await transport.shutdown()
    }

    func testKeepsAsManyIdleConnectionsPerHostAsConfigured() async throws {
        // Two waves of eight requests, each answered once the whole wave has arrived: the first
        // wave opens eight connections. Keeping eight, the second wave goes over them; keeping
        // three, it connects five again.
        for (kept, connections) in [(8, 8), (3, 13)] {
            let server = try WaveServer(wave: 8)
            let transport = try SocketHTTPTransport(configuration: .init(maxIdleConnectionsPerHost: kept))
            let wave = HTTPClientRequest(url: url(server.port, "/"))
            for _ in 0..<2 {
                let bodies = try await withThrowingTaskGroup(of: String.self) { group in
                    for _ in 0..<8 { group.addTask { try await transport.send(wave, timeout: .seconds(10)).text } }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                XCTAssertEqual(bodies, Array(repeating: "ok", count: 8))
            }
            XCTAssertEqual(server.accepted.value, connections, "keeping \(kept) idle connections")
            await transport.shutdown()
        }
    }

    func testSendsBodyQueryAndHostToTheServer() async throws {
        let server = try makeServer()
        let transport = try SocketHTTPTransport()
        let response = try await transport.send(
            HTTPClientRequest(method: "POST", url: url(server.port, "/verify?a=1&b=%20"),
                              headers: [("Content-Type", "application/json")], body: Array("{}".utf8)),
            timeout: .seconds(5))
        XCTAssertEqual(response.text, "POST /verify?a=1&b=%20 {}")
        XCTAssertEqual(response.header("CONTENT-TYPE"), "text/plain; charset=utf-8")
        await transport.shutdown()
        await server.shutdown(grace: .seconds(1))
    }

    func testLargeBodyGoesOutWholeBehindTheHead() async throws {
        // Larger than the socket buffers: head and body leave in several partial sends.
        let server = try makeServer()
        let transport = try SocketHTTPTransport()
        let body = (0..<3_000_000).map { UInt8(ascii: "a") + UInt8($0 % 26) }
        let response = try await transport.send(HTTPClientRequest(method: "POST", url: url(server.port, "/big"), body: body),
                                                timeout: .seconds(10))
        XCTAssertEqual(response.body, Array("POST /big ".utf8) + body)
        await transport.shutdown()
        await server.shutdown(grace: .seconds(1))
    }

    func testOutgoingBytesContinueAcrossTheHeadAndBodyBoundary() {
        var out = OutgoingBytes(head: Array("HEAD".utf8), body: Array("body".utf8))
        var sent: [UInt8] = []
        for step in [3, 2, 1, 2] {
            XCTAssertTrue(out.hasUnsent)
            out.withUnsent { head, body in sent += Array((Array(head) + Array(body)).prefix(step)) }
            out.markSent(step)
        }
        XCTAssertFalse(out.hasUnsent)
        XCTAssertEqual(String(decoding: sent, as: UTF8.self), "HEADbody")
        XCTAssertFalse(OutgoingBytes().hasUnsent)
    }

    func testDecodesChunkedResponseSentInPieces() async throws {
        let server = try RawServer(script: { socket in
            _ = try socket.readRequest()
            for piece in ["HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhel", "lo\r\n7\r\n, world",
                          "\r\n0\r\nX-Trailer: y\r\n\r\n"] {
                try socket.send(piece)
                usleep(20_000)
            }
            // The connection stays usable after a chunked body.
            _ = try socket.readRequest()
            try socket.send("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nnext")
        })
        let transport = try SocketHTTPTransport()
        let chunked = try await transport.send(request(server.port), timeout: .seconds(5))
        XCTAssertEqual(chunked.text, "hello, world")
        let next = try await transport.send(request(server.port), timeout: .seconds(5))
        XCTAssertEqual(next.text, "next")
        await transport.shutdown()
    }

    func testReadsCloseDelimitedBody() async throws {
        let server = try RawServer(script: { socket in
            _ = try socket.readRequest()
            try socket.send("HTTP/1.0 200 OK\r\n\r\nuntil the end")
        })
        let transport = try SocketHTTPTransport()
        let response = try await transport.send(request(server.port), timeout: .seconds(5))
        XCTAssertEqual(response.text, "until the end")
        await transport.shutdown()
    }

    func testTimesOutOnHangingServer() async throws {
        let server = try RawServer(script: { socket in
            _ = try socket.readRequest()
            _ = try? socket.readSome()  // hold the connection open, never answer
        })
        let transport = try SocketHTTPTransport()
        await assertThrows(.timeout) { try await transport.send(self.request(server.port), timeout: .milliseconds(300)) }
        await transport.shutdown()
    }

    func testResetAndEOFMidResponseAreConnectionReset() async throws {
        let server = try RawServer(script: { socket in
            _ = try socket.readRequest()
            try socket.send("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc")
            usleep(20_000)
            socket.reset()
        })
        let transport = try SocketHTTPTransport()
        await assertThrows(.connectionReset) { try await transport.send(self.request(server.port), timeout: .seconds(5)) }

        let eofServer = try RawServer(script: { socket in
            _ = try socket.readRequest()
            try socket.send("HTTP/1.1 200 OK\r\nContent-Len")
            socket.shutdownWrite()
        })
        await assertThrows(.connectionReset) { try await transport.send(self.request(eofServer.port), timeout: .seconds(5)) }
        await transport.shutdown()
    }

    func testRefusedConnectionIsConnectionFailed() async throws {
        let port = try RawServer(script: { _ in }, connections: 0).port  // bound, then closed at once
        let transport = try SocketHTTPTransport()
        do {
            _ = try await transport.send(request(port), timeout: .seconds(5))
            XCTFail("expected a failure")
        } catch let error as HTTPClientError {
            guard case .connectionFailed = error else { return XCTFail("\(error)") }
        }
        await transport.shutdown()
    }

    func testStalePooledConnectionIsReplaced() async throws {
        let server = try makeServer { $0.idleKeepAliveTimeout = .milliseconds(100) }
        let transport = try SocketHTTPTransport()
        _ = try await transport.send(request(server.port, "/one"), timeout: .seconds(5))
        try await Task.sleep(for: .milliseconds(300))  // the server has closed the pooled connection
        let second = try await transport.send(request(server.port, "/two"), timeout: .seconds(5))
        XCTAssertEqual(second.text, "GET /two ")
        await transport.shutdown()
        await server.shutdown(grace: .seconds(1))
    }

    func testCancellationFailsTheRequest() async throws {
        let server = try RawServer(script: { socket in
            _ = try socket.readRequest()
            _ = try? socket.readSome()
        })
        let transport = try SocketHTTPTransport()
        let hanging = request(server.port)
        let pending = Task { try await transport.send(hanging, timeout: .seconds(30)) }
        try await Task.sleep(for: .milliseconds(50))
        pending.cancel()
        do {
            _ = try await pending.value
            XCTFail("expected cancellation")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error, .cancelled)
        }
        await transport.shutdown()
    }

    func testSchemePolicy() async throws {
        let transport = try SocketHTTPTransport()
        let routing = RoutingHTTPTransport(plain: transport, tls: transport, plainHTTPLoopbackOnly: true)
        await assertThrows(.insecureTransportNotAllowed(host: "example.com")) {
            try await routing.send(HTTPClientRequest(url: URL(string: "http://example.com/")!), timeout: .seconds(1))
        }
        await assertThrows(.unsupportedURL("ftp://127.0.0.1/")) {
            try await routing.send(HTTPClientRequest(url: URL(string: "ftp://127.0.0.1/")!), timeout: .seconds(1))
        }
        await transport.shutdown()
    }

    func testRoutingSendsPlainHTTPToSocketsAndHTTPSThroughVerifiedTLS() async throws {
        let server = try makeServer()
        let routing = try RoutingHTTPTransport(plainHTTPLoopbackOnly: true)
        let plain = try await routing.send(request(server.port, "/plain"), timeout: .seconds(5))
        XCTAssertEqual(plain.text, "GET /plain ")
        // TLS to a plain-HTTP peer must fail the handshake, never fall back to plain text.
        let plainPeer = try RawServer(script: { socket in
            _ = try socket.readSome()
            try socket.send("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
        })
        do {
            _ = try await routing.send(HTTPClientRequest(url: URL(string: "https://127.0.0.1:\(plainPeer.port)/")!),
                                       timeout: .seconds(5))
            XCTFail("TLS to a plain HTTP server cannot succeed")
        } catch is HTTPClientError {}
        await server.shutdown(grace: .seconds(1))
    }

    func testLoopbackHostPolicy() {
        for host in ["127.0.0.1", "127.1.2.3", "localhost", "LOCALHOST", "::1", "[::1]", "::ffff:127.0.0.1"] {
            XCTAssertTrue(isLoopbackHost(host), host)
        }
        for host in ["10.0.0.1", "128.0.0.1", "example.com", "127.0.0.1.evil.com", "localhost.evil.com.", "::2", "", "1270.0.0.1"] {
            XCTAssertFalse(isLoopbackHost(host), host)
        }
    }

    private func assertThrows(_ expected: HTTPClientError, file: StaticString = #filePath, line: UInt = #line,
                              _ body: () async throws -> HTTPClientResponse) async {
        do {
            let response = try await body()
            XCTFail("expected \(expected), got status \(response.status)", file: file, line: line)
        } catch {
            XCTAssertEqual(error as? HTTPClientError, expected, file: file, line: line)
        }
    }
}

import Foundation
import XCTest
@testable import HTTP

/// Echoes "METHOD path?query body" so tests can see what the handler received.
let echoHandler: HTTPHandler = { request in
    let query = request.query.map { "?" + $0 } ?? ""
    return .text(status: 200, "\(request.method) \(request.path)\(query) \(String(decoding: request.body, as: UTF8.self))")
}

func makeServer(_ configure: (inout HTTPServer.Configuration) -> Void = { _ in },
                handler: @escaping HTTPHandler = echoHandler) throws -> HTTPServer {
    var configuration = HTTPServer.Configuration()
    configure(&configuration)
    let server = HTTPServer(configuration: configuration, handler: handler)
    try server.start()
    return server
}

final class HTTPServerTests: XCTestCase {
    func testGetAndPostWithBody() async throws {
        let server = try makeServer()
        let port = server.port
        let (get, post) = try await onThread {
            let client = try RawSocket.connect(port: port)
            try client.send("GET /hello?x=1 HTTP/1.1\r\nHost: t\r\n\r\n")
            let get = try client.readResponse()
            try client.send("POST /items HTTP/1.1\r\nHost: t\r\nContent-Length: 11\r\n\r\nhello world")
            return (get, try client.readResponse())
        }
        XCTAssertEqual(get.status, 200)
        XCTAssertEqual(get.text, "GET /hello?x=1 ")
        XCTAssertEqual(get.header("content-length"), "15")
        XCTAssertEqual(post.text, "POST /items hello world")
        await server.shutdown(grace: .seconds(1))
    }

    func testKeepAliveServesTwoRequestsOnOneConnectionAndPipelining() async throws {
        let server = try makeServer()
        let port = server.port
        let responses = try await onThread {
            let client = try RawSocket.connect(port: port)
            try client.send("GET /a HTTP/1.1\r\nHost: t\r\n\r\n")
            let first = try client.readResponse()
            try client.send("GET /b HTTP/1.1\r\nHost: t\r\n\r\n")
            let second = try client.readResponse()
            // Two requests in one write: the second waits in the buffer until the first is answered.
            try client.send("GET /c HTTP/1.1\r\nHost: t\r\n\r\nGET /d HTTP/1.1\r\nHost: t\r\n\r\n")
            let pipelined = try client.readResponses(2)
            return [first, second] + pipelined
        }
        XCTAssertEqual(responses.map(\.text), ["GET /a ", "GET /b ", "GET /c ", "GET /d "])
        XCTAssertNil(responses[0].header("Connection"))
        await server.shutdown(grace: .seconds(1))
    }

    /// A slow handler: what the client sends meanwhile is read ahead and answered in order
    /// afterwards, past the read-ahead limit too (the server then stops reading until it answers).
    func testRequestsSentWhileOneIsHandledAreAnsweredInOrder() async throws {
        let server = try makeServer(handler: { request in
            if request.path == "/slow" { try? await Task.sleep(for: .milliseconds(150)) }
            return .text(status: 200, request.path)
        })
        let port = server.port
        let count = 3_000  // about 95 KB of requests: past the read-ahead limit
        let responses = try await onThread {
            let client = try RawSocket.connect(port: port)
            try client.send("GET /slow HTTP/1.1\r\nHost: t\r\n\r\n")
            usleep(30_000)  // the slow request is being handled
            try client.send("GET /next HTTP/1.1\r\nHost: t\r\n\r\n")
            let ahead = (0..<count).map { "GET /r\($0) HTTP/1.1\r\nHost: t\r\n\r\n" }.joined()
            XCTAssertGreaterThan(ahead.utf8.count, ServerCore.readAheadLimit)
            try client.send(ahead)
            return try client.readResponses(count + 2)
        }
        XCTAssertEqual(responses.map(\.text), ["/slow", "/next"] + (0..<count).map { "/r\($0)" })
        await server.shutdown(grace: .seconds(1))
    }

    /// A client that shuts its side once its request is sent still reads the whole answer; the
    /// server closes the connection after it.
    func testAClientThatShutsItsSideAfterTheRequestStillGetsTheAnswer() async throws {
        let server = try makeServer(handler: { request in
            try? await Task.sleep(for: .milliseconds(100))
            return .text(status: 200, "late answer to \(request.path)")
        })
        let port = server.port
        let (answer, pipelined) = try await onThread {
            let client = try RawSocket.connect(port: port)
            try client.send("GET /one HTTP/1.1\r\nHost: t\r\n\r\n")
            usleep(20_000)  // the request is being handled when the client shuts its side
            client.shutdownWrite()
            let answer = String(decoding: try client.readToEOF(), as: UTF8.self)
            // Two requests, then the shutdown at once: both answered, then closed.
            let other = try RawSocket.connect(port: port)
            try other.send("GET /a HTTP/1.1\r\nHost: t\r\n\r\nGET /b HTTP/1.1\r\nHost: t\r\n\r\n")
            other.shutdownWrite()
            return (answer, String(decoding: try other.readToEOF(), as: UTF8.self))
        }
        XCTAssertTrue(answer.hasPrefix("HTTP/1.1 200 "), answer)
        XCTAssertTrue(answer.hasSuffix("late answer to /one"), answer)
        XCTAssertTrue(pipelined.contains("late answer to /a") && pipelined.hasSuffix("late answer to /b"), pipelined)
        await server.shutdown(grace: .seconds(1))
    }

    /// apple-sim's mode: what the immediate handler answers is written from the loop thread; what it
    /// leaves (nil) goes to the async handler; keep-alive and pipelined requests are answered in order.
    func testImmediateHandlerAnswersOnTheLoopAndHandsTheRestOn() async throws {
        let server = try makeServer({ configuration in
            configuration.immediateHandler = { request in
                // Outside any task: called on the loop thread itself.
                request.path == "/fast" ? .text(status: 200, "/fast in task: \(withUnsafeCurrentTask { $0 != nil })") : nil
            }
        }, handler: { request in
            try? await Task.sleep(for: .milliseconds(20))
            return .text(status: 200, "\(request.path) later")
        })
        let port = server.port
        let texts = try await onThread {
            let client = try RawSocket.connect(port: port)
            var texts: [String] = []
            for path in ["/fast", "/slow", "/fast"] {
                try client.send("GET \(path) HTTP/1.1\r\nHost: t\r\n\r\n")
                texts.append(try client.readResponse().text)
            }
            try client.send("GET /slow HTTP/1.1\r\nHost: t\r\n\r\nGET /fast HTTP/1.1\r\nHost: t\r\n\r\n")
            return texts + (try client.readResponses(2)).map(\.text)
        }
        XCTAssertEqual(texts, ["/fast in task: false", "/slow later", "/fast in task: false", "/slow later", "/fast in task: false"])
        await server.shutdown(grace: .seconds(1))
    }

    func testConnectionCloseIsHonouredAndHTTP10Closes() async throws {
        let server = try makeServer()
        let port = server.port
        let (closing, tail, old, oldTail) = try await onThread {
            let client = try RawSocket.connect(port: port)
            try client.send("GET /x HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            let response = try client.readResponse()
            let tail = try client.readToEOF()
            let client10 = try RawSocket.connect(port: port)
            try client10.send("GET /y HTTP/1.0\r\n\r\n")
            return (response, tail, try client10.readResponse(), try client10.readToEOF())
        }
        XCTAssertEqual(closing.status, 200)
        XCTAssertEqual(closing.header("connection"), "close")
        XCTAssertEqual(tail, [])
        XCTAssertEqual(old.text, "GET /y ")
        XCTAssertEqual(oldTail, [])
        await server.shutdown(grace: .seconds(1))
    }

    func testRouterParamsNotFoundAndMethodNotAllowed() async throws {
        var router = HTTPRouter()
        router.get("/v1/jobs/{id}") { _, params in .text(status: 200, "job \(params["id"] ?? "")") }
        router.get("/v1/jobs/stats") { _, _ in .text(status: 200, "stats") }
        router.post("/v1/receipts") { request, _ in .json(status: 202, request.body) }
        let routes = Locked<[String]>([])
        var configuration = HTTPServer.Configuration()
        configuration.onRequestCompleted = { method, route, status, seconds in
            XCTAssertGreaterThanOrEqual(seconds, 0)
            routes.withLock { $0.append("\(method) \(route) \(status)") }
        }
        let server = HTTPServer(configuration: configuration, router: router)
        let port = try server.start()
        let transport = try SocketHTTPTransport()
        let job = try await transport.send(HTTPClientRequest(url: url(port, "/v1/jobs/a%20b")), timeout: .seconds(5))
        let stats = try await transport.send(HTTPClientRequest(url: url(port, "/v1/jobs/stats")), timeout: .seconds(5))
        let missing = try await transport.send(HTTPClientRequest(url: url(port, "/v1/nope")), timeout: .seconds(5))
        let wrong = try await transport.send(HTTPClientRequest(method: "DELETE", url: url(port, "/v1/jobs/1")), timeout: .seconds(5))
        let created = try await transport.send(HTTPClientRequest(method: "POST", url: url(port, "/v1/receipts"),
                                                                 body: Array(#"{"a":1}"#.utf8)), timeout: .seconds(5))
        XCTAssertEqual(job.text, "job a b")
        XCTAssertEqual(stats.text, "stats")
        XCTAssertEqual(missing.status, 404)
        XCTAssertEqual(missing.header("content-type"), "application/json")
        XCTAssertEqual(missing.text, #"{"error":"not found"}"#)
        XCTAssertEqual(wrong.status, 405)
        XCTAssertEqual(wrong.header("allow"), "GET, HEAD")
        XCTAssertEqual(created.status, 202)
        XCTAssertEqual(created.text, #"{"a":1}"#)
        XCTAssertEqual(routes.withLock { $0 }, ["GET /v1/jobs/{id} 200", "GET /v1/jobs/stats 200", "GET unmatched 404",
                                                "DELETE /v1/jobs/{id} 405", "POST /v1/receipts 202"])
        await transport.shutdown()
        await server.shutdown(grace: .seconds(1))
    }

    func testOversizeBodyIsRejectedFromContentLengthAlone() async throws {
        let calls = Counter()
        let server = try makeServer({ $0.maxBodyBytes = 1024 }) { _ in calls.increment(); return .text(status: 200, "") }
        let port = server.port
        let response = try await onThread {
            let client = try RawSocket.connect(port: port)
            // No body byte is ever sent: the answer must come from the header alone.
            try client.send("POST /big HTTP/1.1\r\nHost: t\r\nContent-Length: 10000000\r\n\r\n")
            return try client.readResponse()
        }
        XCTAssertEqual(response.status, 413)
        XCTAssertEqual(response.header("connection"), "close")
        XCTAssertTrue(response.text.hasPrefix(#"{"error":"#))
        XCTAssertEqual(calls.value, 0)
        await server.shutdown(grace: .seconds(1))
    }

    func testExpect100ContinueGetsInterimResponse() async throws {
        let server = try makeServer()
        let port = server.port
        let (interim, final) = try await onThread {
            let client = try RawSocket.connect(port: port)
            try client.send("POST /e HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
            let interim = String(decoding: try client.readSome() ?? [], as: UTF8.self)
            try client.send("abcde")
            return (interim, try client.readResponse())
        }
        XCTAssertEqual(interim, "HTTP/1.1 100 Continue\r\n\r\n")
        XCTAssertEqual(final.text, "POST /e abcde")
        await server.shutdown(grace: .seconds(1))
    }

    /// Sends `raw` on a fresh connection and returns the status of the answer (0 if none).
    private static func statusFor(_ raw: String, port: Int) throws -> Int {
        let client = try RawSocket.connect(port: port)
        try client.send(raw)
        let bytes = try client.readToEOF()
        let line = String(decoding: bytes.prefix(12), as: UTF8.self)
        return Int(line.dropFirst(9).prefix(3)) ?? 0
    }

    func testRejectsHeaderFloodChunkedAndMalformedRequests() async throws {
        let calls = Counter()
        let server = try makeServer({ $0.maxHeaderBytes = 1024 }) { _ in calls.increment(); return .text(status: 200, "") }
        let port = server.port
        let statuses = try await onThread {
            [
                try Self.statusFor("GET / HTTP/1.1\r\n" + String(repeating: "X-Flood: aaaaaaaaaaaaaaaaaaaa\r\n", count: 100), port: port),
                try Self.statusFor("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", port: port),
                try Self.statusFor("GARBAGE\r\n\r\n", port: port),
                try Self.statusFor("GET /x\r\n\r\n", port: port),
                try Self.statusFor("GET /x HTTP/1.1\r\nBad Header: x\r\n\r\n", port: port),
                try Self.statusFor("GET /x HTTP/1.1\r\n folded: x\r\n\r\n", port: port),
                try Self.statusFor("POST /x HTTP/1.1\r\nContent-Length: 5, 6\r\n\r\n", port: port),
                try Self.statusFor("GET /x HTTP/2.0\r\n\r\n", port: port),
                // The request line is exactly three parts: a token, a target, a version.
                try Self.statusFor("GET  /x HTTP/1.1\r\n\r\n", port: port),
                try Self.statusFor(" /x HTTP/1.1\r\n\r\n", port: port),
                try Self.statusFor("GET /x HTTP/1.1 extra\r\n\r\n", port: port),
                try Self.statusFor("G@T /x HTTP/1.1\r\n\r\n", port: port),
                try Self.statusFor("GET x HTTP/1.1\r\n\r\n", port: port),
                try Self.statusFor("POST /x HTTP/1.1\r\nContent-Length: +5\r\n\r\nhello", port: port),
                try Self.statusFor("POST /x HTTP/1.1\r\nContent-Length: 5,\r\n\r\nhello", port: port),
            ]
        }
        XCTAssertEqual(statuses, [431, 411, 400, 400, 400, 400, 400, 505, 400, 400, 400, 400, 400, 400, 400])
        XCTAssertEqual(calls.value, 0)
        // Repeated lengths that agree, padded, are one length; an absolute-form target is its path.
        let agreeing = try await onThread {
            try Self.statusFor("POST http://example.test/x?y=1 HTTP/1.1\r\nContent-Length:  5 , 5\r\nConnection: keep-alive, Close\r\n\r\nhello", port: port)
        }
        XCTAssertEqual(agreeing, 200)
        XCTAssertEqual(calls.value, 1)
        await server.shutdown(grace: .seconds(1))
    }

    func testSlowlorisIsDroppedWhileOthersAreServed() async throws {
        let server = try makeServer { $0.headerTimeout = .milliseconds(300) }
        let port = server.port
        let (served, dropped) = try await onThread {
            let slow = try RawSocket.connect(port: port, receiveTimeout: 10)
            try slow.send("GET / HTTP/1.1\r\nHost: t\r\nX-Slow: ")
            let other = try RawSocket.connect(port: port)
            try other.send("GET /ok HTTP/1.1\r\nHost: t\r\n\r\n")
            let served = try other.readResponse()
            // The stalled client gets a best-effort 408, then EOF (a read timeout would throw).
            return (served, String(decoding: try slow.readToEOF(), as: UTF8.self))
        }
        XCTAssertEqual(served.text, "GET /ok ")
        XCTAssertTrue(dropped.isEmpty || dropped.hasPrefix("HTTP/1.1 408"), dropped)
        await server.shutdown(grace: .seconds(1))
    }

    func testSlowBodyTimesOutAndTruncatedBodyNeverReachesHandler() async throws {
        let calls = Counter()
        let server = try makeServer({ $0.bodyTimeout = .milliseconds(300) }) { _ in
            calls.increment()
            return .text(status: 200, "")
        }
        let port = server.port
        let (truncated, stalled) = try await onThread {
            let client = try RawSocket.connect(port: port)
            try client.send("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n0123456789")
            client.shutdownWrite()  // the client gives up: EOF mid-body
            let truncated = try client.readToEOF()
            let staller = try RawSocket.connect(port: port)
            try staller.send("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n0123456789")
            return (truncated, String(decoding: try staller.readToEOF(), as: UTF8.self))
        }
        XCTAssertEqual(truncated, [])
        XCTAssertTrue(stalled.isEmpty || stalled.hasPrefix("HTTP/1.1 408"), stalled)
        XCTAssertEqual(calls.value, 0)
        await server.shutdown(grace: .seconds(1))
    }

    func testIdleKeepAliveConnectionIsClosed() async throws {
        let server = try makeServer { $0.idleKeepAliveTimeout = .milliseconds(200) }
        let port = server.port
        let (response, tail) = try await onThread {
            let client = try RawSocket.connect(port: port)
            try client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            return (try client.readResponse(), try client.readToEOF())
        }
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(tail, [])
        await server.shutdown(grace: .seconds(1))
    }

    func testConnectionsBeyondMaxAreClosedAtOnce() async throws {
        let server = try makeServer { $0.maxConnections = 2 }
        let port = server.port
        let (third, firstStillWorks) = try await onThread {
            let a = try RawSocket.connect(port: port), b = try RawSocket.connect(port: port)
            for client in [a, b] {  // a completed request proves the server holds the connection
                try client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
                _ = try client.readResponse()
            }
            let c = try RawSocket.connect(port: port)
            let third = try c.readToEOF()
            try a.send("GET /again HTTP/1.1\r\nHost: t\r\n\r\n")
            return (third, try a.readResponse().text)
        }
        XCTAssertEqual(third, [])
        XCTAssertEqual(firstStillWorks, "GET /again ")
        await server.shutdown(grace: .seconds(1))
    }

    func testThousandMixedBadRequestsThenAGoodOne() async throws {
        let calls = Counter()
        let server = try makeServer({ $0.maxBodyBytes = 100; $0.maxHeaderBytes = 512 }) { _ in
            calls.increment()
            return .text(status: 200, "fine")
        }
        let port = server.port
        let bad = [
            "NOT HTTP AT ALL\r\n\r\n",
            "GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: 999999\r\n\r\n",
            "GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
            "GET / HTTP/1.1\r\n" + String(repeating: "A", count: 600) + "\r\n\r\n",
            "GET /\u{1}\u{2} HTTP/1.1\r\nX: \u{0}\r\n\r\n",
            "\u{16}\u{3}\u{1}\u{2}\u{0}\u{1}\u{0}\r\n\r\n",
        ]
        let failures = try await withThrowingTaskGroup(of: Int.self) { group in
            for worker in 0..<4 {
                group.addTask {
                    try await onThread {
                        var failures = 0
                        for i in 0..<250 {
                            let client = try RawSocket.connect(port: port)
                            try client.send(bad[(worker * 250 + i) % bad.count])
                            let answer = String(decoding: try client.readToEOF().prefix(10), as: UTF8.self)
                            if !answer.hasPrefix("HTTP/1.1 4") { failures += 1 }
                        }
                        return failures
                    }
                }
            }
            return try await group.reduce(0, +)
        }
        XCTAssertEqual(failures, 0)
        let transport = try SocketHTTPTransport()
        let good = try await transport.send(HTTPClientRequest(url: url(port, "/")), timeout: .seconds(5))
        XCTAssertEqual(good.text, "fine")
        XCTAssertEqual(calls.value, 1)
        await transport.shutdown()
        await server.shutdown(grace: .seconds(1))
    }

    func testGracefulShutdownWaitsForInFlightHandler() async throws {
        let started = Counter()
        let server = try makeServer(handler: { _ in
            started.increment()
            try? await Task.sleep(for: .milliseconds(300))
            return .text(status: 200, "finished")
        })
        let port = server.port
        let transport = try SocketHTTPTransport()
        let inFlight = Task { try await transport.send(HTTPClientRequest(url: url(port, "/slow")), timeout: .seconds(10)) }
        while started.value == 0 { try await Task.sleep(for: .milliseconds(5)) }
        await server.shutdown(grace: .seconds(5))
        let response = try await inFlight.value
        XCTAssertEqual(response.text, "finished")
        XCTAssertEqual(response.header("connection"), "close")
        do {
            _ = try await transport.send(HTTPClientRequest(url: url(port, "/after")), timeout: .seconds(2))
            XCTFail("the listener should be closed")
        } catch let error as HTTPClientError {
            guard case .connectionFailed = error else { return XCTFail("\(error)") }
        }
        await transport.shutdown()
    }

    func testShutdownGraceExpiryCancelsStuckHandler() async throws {
        let started = Counter(), cancelled = Counter()
        let server = try makeServer(handler: { _ in
            started.increment()
            do { try await Task.sleep(for: .seconds(30)) } catch { cancelled.increment() }
            return .text(status: 200, "late")
        })
        let port = server.port
        let transport = try SocketHTTPTransport()
        let inFlight = Task { try await transport.send(HTTPClientRequest(url: url(port, "/stuck")), timeout: .seconds(10)) }
        while started.value == 0 { try await Task.sleep(for: .milliseconds(5)) }
        await server.shutdown(grace: .milliseconds(200))
        do {
            _ = try await inFlight.value
            XCTFail("the connection should have been closed")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error, .connectionReset)
        }
        while cancelled.value == 0 { try await Task.sleep(for: .milliseconds(5)) }
        await transport.shutdown()
    }

    func testRunReturnsAfterShutdown() async throws {
        let server = HTTPServer(configuration: .init(), handler: echoHandler)
        let running = Task { try await server.run() }
        while server.port == 0 { try await Task.sleep(for: .milliseconds(5)) }
        running.cancel()  // cancellation starts a graceful shutdown
        try await running.value
    }

    func testFiveHundredConcurrentSlowRequests() async throws {
        let server = try makeServer(handler: { request in
            try? await Task.sleep(for: .milliseconds(200))
            return .text(status: 200, request.path)
        })
        let port = server.port
        let transport = try SocketHTTPTransport()
        let answered = try await withThrowingTaskGroup(of: Bool.self) { group in
            for i in 0..<500 {
                group.addTask {
                    let response = try await transport.send(HTTPClientRequest(url: url(port, "/r\(i)")), timeout: .seconds(15))
                    return response.status == 200 && response.text == "/r\(i)"
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        XCTAssertEqual(answered, 500)
        await transport.shutdown()
        await server.shutdown(grace: .seconds(1))
    }

    func testListenAddressParsing() throws {
        XCTAssertTrue(try HTTPServerConfiguration.parseListenAddress("127.0.0.1:8080") == ("127.0.0.1", 8080))
        XCTAssertTrue(try HTTPServerConfiguration.parseListenAddress("[::1]:8080") == ("::1", 8080))
        XCTAssertTrue(try HTTPServerConfiguration.parseListenAddress(":8080") == ("0.0.0.0", 8080))
        XCTAssertTrue(try HTTPServerConfiguration.parseListenAddress("0.0.0.0:0") == ("0.0.0.0", 0))
        for bad in ["8080", "127.0.0.1", "127.0.0.1:99999", "::1:80", "host name:80", "1.2.3.4:-1", "[::1]8080"] {
            XCTAssertThrowsError(try HTTPServerConfiguration.parseListenAddress(bad), bad)
        }
        XCTAssertEqual(try HTTPServerConfiguration(listen: "127.0.0.1:9464").port, 9464)
    }

    func testBindsIPv6Loopback() async throws {
        let server = HTTPServer(configuration: try .init(listen: "[::1]:0"), handler: echoHandler)
        let port: Int
        do { port = try server.start() } catch { throw XCTSkip("no IPv6 loopback: \(error)") }
        let transport = try SocketHTTPTransport()
        let response = try await transport.send(HTTPClientRequest(url: URL(string: "http://[::1]:\(port)/six")!), timeout: .seconds(5))
        XCTAssertEqual(response.text, "GET /six ")
        await transport.shutdown()
        await server.shutdown(grace: .seconds(1))
    }
}

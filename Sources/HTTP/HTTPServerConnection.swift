#if canImport(Glibc)
import Glibc
import Foundation

/// One accepted socket. Owned and touched only by the server's loop thread.
final class ServerConnection {
    enum State { case readingHead, readingBody, handling, writing, lingering }

    let fd: Int32
    var token: UInt64 = 0
    var state = State.readingHead
    var closed = false
    /// Bytes read but not yet consumed: a partial head, a body, or the start of a next request.
    var buffer: [UInt8] = []
    var scannedHead = 0
    /// Between requests on a keep-alive connection (idle timeout applies, not the header timeout).
    var idle = false
    var request: RequestHead?
    var out: [UInt8] = []
    var outOffset = 0
    var closeAfterWrite = false
    var deadline: UInt64
    var interest: UInt32 = 0
    var requestStart: UInt64
    var lingerDiscarded = 0
    /// The client shut its side while a request of its was handled or written: answer it, then close.
    var peerClosed = false
    var task: Task<Void, Never>?
    /// A request of its is with the handler or its answer is being written.
    var isAnswering: Bool { state == .handling || state == .writing }
    /// The peer's numeric address, read once at accept.
    let remoteAddress: String?

    init(fd: Int32, now: UInt64, deadline: UInt64) {
        self.fd = fd
        self.remoteAddress = SocketAddress.peerHost(of: fd)
        self.requestStart = now
        self.deadline = deadline
    }
}

/// A parsed request line and header fields, waiting for its body.
struct RequestHead {
    var method: String
    var path: String
    var query: String?
    var version: String
    var headers: HTTPHeaderFields
    var contentLength: Int
    var keepAlive: Bool
}

/// The server's loop-thread side: accepting, parsing, deadlines, writing, draining.
/// `@unchecked Sendable` because every mutable field is confined to the loop thread; other
/// threads reach it only through `loop.execute`.
final class ServerCore: @unchecked Sendable {
    private let config: HTTPServerConfiguration
    private let handler: HTTPHandler
    let loop: EventLoop
    private let listenFD: Int32
    private var listenToken: UInt64 = 0
    private var connections: [UInt64: ServerConnection] = [:]
    private var draining = false
    private var drainDeadline: UInt64?
    private var stopping = false
    private var acceptPausedUntil: UInt64?
    private let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 1)

    private let headerTimeout: UInt64, bodyTimeout: UInt64, idleTimeout: UInt64, lingerTimeout: UInt64

    init(config: HTTPServerConfiguration, handler: @escaping HTTPHandler, listenFD: Int32, loop: EventLoop) {
        self.config = config
        self.handler = handler
        self.listenFD = listenFD
        self.loop = loop
        headerTimeout = config.headerTimeout.nanoseconds
        bodyTimeout = config.bodyTimeout.nanoseconds
        idleTimeout = config.idleKeepAliveTimeout.nanoseconds
        // After an error response, read (and discard) what the client still sends for a moment,
        // so closing does not reset the connection before the client has read our answer.
        lingerTimeout = min(2_000_000_000, headerTimeout)
        let shortest = min(headerTimeout, bodyTimeout, idleTimeout)
        loop.setSweep(granularity: min(250_000_000, max(5_000_000, shortest / 10))) { self.sweep() }
    }

    deinit { readBuffer.deallocate() }

    // MARK: accepting

    func startListening() {
        listenToken = loop.register(fd: listenFD, events: EventLoop.readable) { _ in self.acceptReady() }
    }

    private func acceptReady() {
        for _ in 0..<256 {
            let fd = Epoll.accept(listenFD)
            if fd < 0 {
                let code = errno
                if code == EINTR || code == ECONNABORTED { continue }
                if code == EMFILE || code == ENFILE || code == ENOBUFS || code == ENOMEM {
                    // Out of descriptors: level-triggered epoll would spin, so pause accepting briefly.
                    loop.modify(fd: listenFD, token: listenToken, events: 0)
                    let until = monotonicNanos() + 100_000_000
                    acceptPausedUntil = until
                    loop.noteDeadline(until)
                }
                return
            }
            if draining || connections.count >= config.maxConnections {
                close(fd)
                continue
            }
            Socket.setNoDelay(fd)
            let now = monotonicNanos()
            let conn = ServerConnection(fd: fd, now: now, deadline: now + headerTimeout)
            conn.token = loop.register(fd: fd, events: EventLoop.readable) { events in
                self.onEvents(conn, events)
            }
            conn.interest = EventLoop.readable
            connections[conn.token] = conn
            loop.noteDeadline(conn.deadline)
        }
    }

    // MARK: reading and parsing

    private func onEvents(_ conn: ServerConnection, _ events: UInt32) {
        if events & EventLoop.writable != 0 { flush(conn) }
        guard !conn.closed else { return }
        if events & (EventLoop.readable | EventLoop.hangup) != 0 { onReadable(conn) }
    }

    private func onReadable(_ conn: ServerConnection) {
        let n = read(conn.fd, readBuffer.baseAddress, readBuffer.count)
        if n == 0 {
            // A client may shut its side after sending a request and still read the answer.
            if conn.isAnswering {
                conn.peerClosed = true
                return updateInterest(conn)
            }
            return closeConnection(conn)  // EOF: a truncated request is simply dropped
        }
        if n < 0 {
            if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return }
            return closeConnection(conn)
        }
        if conn.state == .lingering {
            conn.lingerDiscarded += n
            if conn.lingerDiscarded > 1 << 20 { closeConnection(conn) }
            return
        }
        if conn.idle {
            let now = monotonicNanos()
            conn.idle = false
            conn.requestStart = now
            setDeadline(conn, now + headerTimeout)
        }
        conn.buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: readBuffer[0..<n]))
        if conn.isAnswering { return updateInterest(conn) }  // read ahead, parsed once answered
        processBuffer(conn)
    }

    private func processBuffer(_ conn: ServerConnection) {
        if conn.state == .readingHead {
            // Tolerate stray CRLFs between requests (RFC 9112 §2.2).
            let stray = conn.buffer.prefix { $0 == 13 || $0 == 10 }.count
            if stray > 0 { conn.buffer.removeFirst(stray); conn.scannedHead = 0 }
            guard !conn.buffer.isEmpty else { return }
            guard let end = HTTPHead.findEnd(conn.buffer, from: conn.scannedHead) else {
                conn.scannedHead = conn.buffer.count
                if conn.buffer.count > config.maxHeaderBytes {
                    reject(conn, 431, "request headers too large")
                }
                return
            }
            if end > config.maxHeaderBytes { return reject(conn, 431, "request headers too large") }
            let head: RequestHead
            do {
                head = try parseRequestHead(conn.buffer[0..<end])
            } catch let failure as RequestRejection {
                return reject(conn, failure.status, failure.message, method: failure.method)
            } catch {
                return reject(conn, 400, "malformed request")
            }
            conn.buffer.removeFirst(end)
            conn.scannedHead = 0
            conn.request = head
            conn.state = .readingBody
            setDeadline(conn, monotonicNanos() + bodyTimeout)
            if head.contentLength > conn.buffer.count {
                conn.buffer.reserveCapacity(head.contentLength)
                if head.headers.firstValue("Expect")?.lowercased() == "100-continue" {
                    conn.out.append(contentsOf: Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
                    flush(conn)
                    guard !conn.closed else { return }
                }
            }
        }
        if conn.state == .readingBody, let head = conn.request, conn.buffer.count >= head.contentLength {
            let body = Array(conn.buffer[0..<head.contentLength])
            conn.buffer.removeFirst(head.contentLength)
            dispatch(conn, head, body)
        }
    }

    private struct RequestRejection: Error {
        let status: Int
        let message: String
        var method: String?
    }

    private func parseRequestHead(_ bytes: ArraySlice<UInt8>) throws -> RequestHead {
        let (line, headers) = try HTTPHead.parse(bytes)
        // Split on the two spaces by bytes (a space is one byte, so its index splits the String).
        let utf8 = line.utf8
        guard let firstSpace = utf8.firstIndex(of: UInt8(ascii: " ")),
              let secondSpace = utf8[utf8.index(after: firstSpace)...].firstIndex(of: UInt8(ascii: " ")),
              !utf8[utf8.index(after: secondSpace)...].contains(UInt8(ascii: " ")),
              firstSpace > utf8.startIndex, utf8[..<firstSpace].allSatisfy(HTTPHead.isTokenChar),
              utf8.index(after: firstSpace) < secondSpace else {
            throw RequestRejection(status: 400, message: "malformed request line")
        }
        let method = String(line[..<firstSpace])
        let version = String(line[line.index(after: secondSpace)...])
        guard version == "HTTP/1.1" || version == "HTTP/1.0" else {
            let looksLikeHTTP = version.count == 8 && version.hasPrefix("HTTP/")
            throw RequestRejection(status: looksLikeHTTP ? 505 : 400,
                                   message: looksLikeHTTP ? "unsupported HTTP version" : "malformed request line",
                                   method: method)
        }
        var target = line[line.index(after: firstSpace)..<secondSpace]
        if target.utf8.starts(with: "http://".utf8) || target.utf8.starts(with: "https://".utf8) {  // absolute-form
            let afterScheme = target[target.range(of: "://")!.upperBound...]
            target = afterScheme.utf8.firstIndex(of: UInt8(ascii: "/")).map { afterScheme[$0...] } ?? "/"
        }
        guard target.utf8.first == UInt8(ascii: "/") || (target == "*" && method == "OPTIONS") else {
            throw RequestRejection(status: 400, message: "malformed request target", method: method)
        }
        if HTTPHead.has(headers, "Transfer-Encoding") {
            throw RequestRejection(status: 411, message: "chunked request bodies are not supported; send Content-Length", method: method)
        }
        let length: Int
        do {
            length = try HTTPHead.contentLength(headers) ?? 0
        } catch {
            throw RequestRejection(status: 400, message: "invalid Content-Length", method: method)
        }
        if length > config.maxBodyBytes {
            throw RequestRejection(status: 413, message: "request body larger than \(config.maxBodyBytes) bytes", method: method)
        }
        let keepAlive = version == "HTTP/1.1"
            ? !HTTPHead.hasToken(headers, "Connection", "close")
            : HTTPHead.hasToken(headers, "Connection", "keep-alive")
        let question = target.utf8.firstIndex(of: UInt8(ascii: "?"))
        return RequestHead(method: method,
                           path: String(question.map { target[..<$0] } ?? target),
                           query: question.map { String(target[target.index(after: $0)...]) },
                           version: version, headers: headers, contentLength: length, keepAlive: keepAlive)
    }

    // MARK: handling

    private func dispatch(_ conn: ServerConnection, _ head: RequestHead, _ body: [UInt8]) {
        conn.state = .handling
        conn.deadline = .max  // the handler's own timeouts apply; the grace period bounds shutdown
        let request = HTTPRequest(method: head.method, path: head.path, query: head.query,
                                  version: head.version, headers: head.headers, body: body,
                                  remoteAddress: conn.remoteAddress)
        let token = conn.token
        let handler = self.handler
        if let response = config.immediateHandler?(request) { return respond(token, response) }
        updateInterest(conn)
        let answer: @Sendable () async -> Void = {
            let response = await handler(request)
            self.loop.execute { self.respond(token, response) }
        }
        // A small request's handler starts here, on the loop thread, and leaves it at its first
        // wait (ingest: the enqueue's commit): one hand-off to the task pool fewer per request. A
        // large body's handler starts on the pool, so reading it does not hold up other connections.
        conn.task = body.count <= Self.handlerOnLoopLimit ? Task.immediate(operation: answer) : Task(operation: answer)
    }

    /// The largest body whose handler starts on the loop thread.
    static let handlerOnLoopLimit = 64 * 1024

    private func respond(_ token: UInt64, _ response: HTTPResponse) {
        guard let conn = connections[token], conn.state == .handling, let head = conn.request else { return }
        conn.task = nil
        let close = !head.keepAlive || draining || HTTPHead.hasToken(response.headers, "Connection", "close")
        write(conn, response, close: close, method: head.method, route: response.route ?? head.path)
    }

    /// The server's own error answer: JSON, `Connection: close`, then a lingering close.
    private func reject(_ conn: ServerConnection, _ status: Int, _ message: String, method: String? = nil) {
        conn.buffer = []
        write(conn, .error(status: status, message), close: true, method: method ?? "", route: "")
    }

    // MARK: writing

    /// Written as bytes: apple-sim answers thousands of requests a second through here.
    private func serialize(_ response: HTTPResponse, close: Bool, method: String, version: String) -> [UInt8] {
        let noBody = HTTPStatus.forbidsBody(response.status)
        let withBody = !noBody && method != "HEAD"
        var bytes: [UInt8] = []
        bytes.reserveCapacity(160 + (withBody ? response.body.count : 0))
        func add(_ text: String) { bytes.append(contentsOf: text.utf8) }
        add("HTTP/1.1 ")
        add(String(response.status))
        add(" ")
        add(HTTPStatus.reason(response.status))
        add("\r\n")
        for (name, value) in response.headers {
            if name.equalsIgnoringASCIICase("Content-Length") || name.equalsIgnoringASCIICase("Connection")
                || name.equalsIgnoringASCIICase("Transfer-Encoding") { continue }
            add(name)
            add(": ")
            add(value)
            add("\r\n")
        }
        if !noBody || response.status == 304 {
            add("Content-Length: ")
            add(String(response.body.count))
            add("\r\n")
        }
        if close {
            add("Connection: close\r\n")
        } else if version == "HTTP/1.0" {
            add("Connection: keep-alive\r\n")
        }
        add("\r\n")
        if withBody { bytes.append(contentsOf: response.body) }
        return bytes
    }

    private func write(_ conn: ServerConnection, _ response: HTTPResponse, close: Bool, method: String, route: String) {
        let now = monotonicNanos()
        let bytes = serialize(response, close: close, method: method, version: conn.request?.version ?? "HTTP/1.1")
        if conn.out.isEmpty { conn.out = bytes } else { conn.out.append(contentsOf: bytes) }
        conn.closeAfterWrite = close
        conn.state = .writing
        setDeadline(conn, now + bodyTimeout)
        config.onRequestCompleted?(Self.metricMethod(method), route, response.status,
                                   Double(now - min(now, conn.requestStart)) / 1e9)
        flush(conn)
    }

    /// Unknown methods are folded so a client cannot invent metric label values.
    private static func metricMethod(_ method: String) -> String {
        switch method {
        case "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS": return method
        default: return method.isEmpty ? "" : "OTHER"
        }
    }

    private func flush(_ conn: ServerConnection) {
        while conn.outOffset < conn.out.count {
            let n = conn.out.withUnsafeBytes { Socket.send(conn.fd, UnsafeRawBufferPointer(rebasing: $0[conn.outOffset...])) }
            if n > 0 { conn.outOffset += n; continue }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && Socket.isWouldBlock(errno) { return updateInterest(conn) }
            return closeConnection(conn)
        }
        conn.out = []
        conn.outOffset = 0
        if conn.state == .writing { finishedWriting(conn) } else { updateInterest(conn) }
    }

    private func finishedWriting(_ conn: ServerConnection) {
        if conn.closeAfterWrite || draining {  // a drain may have begun while this was written
            shutdown(conn.fd, Int32(SHUT_WR))
            conn.state = .lingering
            conn.buffer = []
            setDeadline(conn, monotonicNanos() + lingerTimeout)
            return updateInterest(conn)
        }
        let now = monotonicNanos()
        conn.state = .readingHead
        conn.request = nil
        conn.requestStart = now
        conn.idle = conn.buffer.isEmpty
        setDeadline(conn, now + (conn.idle ? idleTimeout : headerTimeout))
        updateInterest(conn)
        processBuffer(conn)  // a pipelined next request may already be buffered
        if conn.peerClosed && conn.state == .readingHead { closeConnection(conn) }  // nothing more will come
    }

    /// Bytes a client may send ahead of its answer (pipelined requests) before the server stops
    /// reading from it until the answer is written.
    static let readAheadLimit = 64 * 1024

    /// Read interest stays on while a request is handled: taking it off and putting it back cost
    /// two `epoll_ctl` calls per request. Only a client that sends past `readAheadLimit` ahead of
    /// its answer, or has shut its side, is not read from until then.
    private func updateInterest(_ conn: ServerConnection) {
        var events: UInt32 = 0
        switch conn.state {
        case .readingHead, .readingBody, .lingering: events |= EventLoop.readable
        case .handling, .writing:
            if !conn.peerClosed && conn.buffer.count < Self.readAheadLimit { events |= EventLoop.readable }
        }
        if conn.outOffset < conn.out.count { events |= EventLoop.writable }
        if events != conn.interest {
            conn.interest = events
            loop.modify(fd: conn.fd, token: conn.token, events: events)
        }
    }

    // MARK: deadlines and closing

    private func setDeadline(_ conn: ServerConnection, _ deadline: UInt64) {
        conn.deadline = deadline
        loop.noteDeadline(deadline)
    }

    private func sweep() -> UInt64? {
        let now = monotonicNanos()
        var next: UInt64?
        if let until = acceptPausedUntil {
            if now >= until {
                acceptPausedUntil = nil
                if !draining { loop.modify(fd: listenFD, token: listenToken, events: EventLoop.readable) }
            } else {
                next = until
            }
        }
        if let drainDeadline, now >= drainDeadline {
            for conn in connections.values {
                conn.task?.cancel()
                closeConnection(conn)
            }
            return nil
        }
        for conn in connections.values {
            if conn.deadline <= now {
                expire(conn, now: now)
            } else if conn.deadline != .max {
                next = min(next ?? .max, conn.deadline)
            }
        }
        if let drainDeadline { next = min(next ?? .max, drainDeadline) }
        return next
    }

    private func expire(_ conn: ServerConnection, now: UInt64) {
        switch conn.state {
        case .readingHead where !conn.idle, .readingBody:
            // One best-effort 408; a client too slow to send is not waited on to read.
            let bytes = serialize(.error(status: 408, "request timed out"), close: true, method: "", version: "HTTP/1.1")
            _ = bytes.withUnsafeBytes { Socket.send(conn.fd, $0) }
            config.onRequestCompleted?(Self.metricMethod(conn.request?.method ?? ""), "", 408,
                                       Double(now - min(now, conn.requestStart)) / 1e9)
            closeConnection(conn)
        default:
            closeConnection(conn)
        }
    }

    private func closeConnection(_ conn: ServerConnection) {
        guard !conn.closed else { return }
        conn.closed = true
        loop.deregister(fd: conn.fd, token: conn.token)
        close(conn.fd)
        connections[conn.token] = nil
        if draining && connections.isEmpty { finishDrain() }
    }

    // MARK: shutdown

    /// Stops accepting, closes connections without a complete request head (idle keep-alive or
    /// still sending headers), lets requests being read or handled finish until `grace`.
    func beginShutdown(grace: Duration) {
        guard !draining else { return }
        draining = true
        loop.deregister(fd: listenFD, token: listenToken)
        close(listenFD)
        let deadline = monotonicNanos() + grace.nanoseconds
        drainDeadline = deadline
        loop.noteDeadline(deadline)
        for conn in connections.values where conn.state == .lingering || conn.state == .readingHead {
            closeConnection(conn)
        }
        if connections.isEmpty { finishDrain() }
    }

    private func finishDrain() {
        guard !stopping else { return }
        stopping = true
        loop.stop()
    }
}
#endif

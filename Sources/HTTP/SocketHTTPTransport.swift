#if canImport(Glibc)
import Glibc
import Foundation
import Synchronization

/// `http://` and `https://` client over non-blocking sockets on one epoll thread, with a keep-alive
/// pool per scheme, host and port. Thousands of requests in flight cost sockets, not threads. TLS is
/// OpenSSL over memory buffers (`TLSSession`): certificates always verified, never relaxed.
public final class SocketHTTPTransport: HTTPTransport {
    public struct Configuration: Sendable {
        /// Idle keep-alive connections kept per host:port; extra ones are closed.
        public var maxIdleConnectionsPerHost: Int
        /// Idle pooled connections are closed after this (below typical server idle timeouts).
        public var idleTimeout: Duration
        public var maxResponseBodyBytes: Int
        /// PEM file of the CAs to trust for https; nil: the system's trust store.
        public var trustedCertificatesFile: String?

        /// Idle connections kept per host: a worker with thousands of verifications in flight
        /// reuses them all instead of reconnecting most of them on every wave.
        public init(maxIdleConnectionsPerHost: Int = 4_096, idleTimeout: Duration = .seconds(30),
                    maxResponseBodyBytes: Int = 16 * 1024 * 1024, trustedCertificatesFile: String? = nil) {
            self.maxIdleConnectionsPerHost = maxIdleConnectionsPerHost
            self.idleTimeout = idleTimeout
            self.maxResponseBodyBytes = maxResponseBodyBytes
            self.trustedCertificatesFile = trustedCertificatesFile
        }
    }

    private let core: ClientCore
    private let nextID = Locked<UInt64>(0)
    private let dnsCache = Locked<[String: (address: SocketAddress, expires: UInt64)]>([:])

    public init(configuration: Configuration = Configuration()) throws {
        let loop = try EventLoop(name: "http-client")
        core = ClientCore(config: configuration, loop: loop)
        loop.start()
    }

    deinit { core.loop.stop() }

    /// Fails requests still in flight, closes pooled connections and joins the loop thread.
    public func shutdown() async {
        core.loop.stop()  // the loop's exit hook fails what is left
        await core.loop.waitUntilExited()
    }

    // Everything up to the socket is prepared in `exchange(for:timeout:)`, whose frame is gone by the
    // time the request waits: what waits (thousands of requests at a time) is the small frame of
    // `perform`, holding one reference.
    public func send(_ request: HTTPClientRequest, timeout: Duration) async throws -> HTTPClientResponse {
        try await perform(try await exchange(for: request, timeout: timeout))
    }

    private func exchange(for request: HTTPClientRequest, timeout: Duration) async throws -> ClientExchange {
        let deadline = monotonicNanos() &+ timeout.nanoseconds
        let (host, port, secure) = try Self.endpoint(request.url)
        let head = try Self.serializeHead(request, host: host, port: port, defaultPort: secure ? 443 : 80)
        // A numeric host (apple-sim, tests) never calls the async resolver: its frame would stay in
        // the task's allocator for the rest of the request.
        let address: SocketAddress
        if let numeric = SocketAddress(numericHost: host, port: port) {
            address = numeric
        } else {
            address = try await resolve(name: host, port: port)
        }
        return ClientExchange(id: nextID.withLock { $0 += 1; return $0 }, key: "\(secure ? "https" : "http")://\(host):\(port)",
                              address: address, tlsHost: secure ? host : nil, head: head, body: request.body,
                              isHead: request.method == "HEAD", deadline: deadline)
    }

    private func perform(_ exchange: ClientExchange) async throws -> HTTPClientResponse {
        let core = self.core
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<HTTPClientResponse, Error>) in
                // Set before the exchange is posted: the loop thread sees it through the post.
                exchange.continuation = continuation
                if !core.loop.execute({ core.start(exchange) }) {
                    exchange.finish(.failure(.connectionFailed("transport is shut down")))
                }
            }
        } onCancel: {
            exchange.cancelled.store(true, ordering: .releasing)  // seen by `start` if cancellation wins the race
            core.loop.execute { core.cancel(exchange.id) }
        }
    }

    static func endpoint(_ url: URL) throws -> (host: String, port: Int, secure: Bool) {
        let secure: Bool
        switch url.scheme?.lowercased() {
        case "http": secure = false
        case "https": secure = true
        default: throw HTTPClientError.unsupportedURL(url.absoluteString)
        }
        guard let host = url.host, !host.isEmpty else { throw HTTPClientError.unsupportedURL(url.absoluteString) }
        return (host, url.port ?? (secure ? 443 : 80), secure)
    }

    /// The request line and headers; the body goes out from the caller's own buffer after them.
    static func serializeHead(_ request: HTTPClientRequest, host: String, port: Int, defaultPort: Int = 80) throws -> [UInt8] {
        guard request.method.utf8.allSatisfy(HTTPHead.isTokenChar), !request.method.isEmpty else {
            throw HTTPClientError.invalidRequest("invalid method")
        }
        // Written as bytes, the target read off the URL's own parse: every Apple call pays this, and
        // a URLComponents parse and string concatenations would be most of it.
        var head: [UInt8] = []
        head.reserveCapacity(256)
        func add(_ text: String) { head.append(contentsOf: text.utf8) }
        add(request.method)
        head.append(UInt8(ascii: " "))
        let path = request.url.path(percentEncoded: true)
        add(path.isEmpty ? "/" : path)
        if let query = request.url.query(percentEncoded: true) {
            head.append(UInt8(ascii: "?"))
            add(query)
        }
        add(" HTTP/1.1\r\n")
        if request.header("Host") == nil {
            add("Host: ")
            add(host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host)
            if port != defaultPort { add(":\(port)") }
            add("\r\n")
        }
        for (name, value) in request.headers {
            guard !name.isEmpty, name.utf8.allSatisfy(HTTPHead.isTokenChar),
                  !value.utf8.contains(where: { $0 == 13 || $0 == 10 || $0 == 0 }) else {
                throw HTTPClientError.invalidRequest("invalid header \(name)")
            }
            // Framing is ours.
            if name.equalsIgnoringASCIICase("Content-Length") || name.equalsIgnoringASCIICase("Transfer-Encoding") { continue }
            add(name)
            add(": ")
            add(value)
            add("\r\n")
        }
        if !request.body.isEmpty || request.method == "POST" || request.method == "PUT" || request.method == "PATCH" {
            add("Content-Length: \(request.body.count)\r\n")
        }
        add("\r\n")
        return head
    }

    /// Names are resolved off the cooperative pool and cached briefly so pooled requests do not
    /// pay a lookup each.
    private func resolve(name host: String, port: Int) async throws -> SocketAddress {
        let key = "\(host):\(port)"
        let now = monotonicNanos()
        if let hit = dnsCache.withLock({ $0[key] }), hit.expires > now { return hit.address }
        let address = try await SocketAddress.resolve(host: host, port: port)
        dnsCache.withLock { $0[key] = (address, now + 60_000_000_000) }
        return address
    }
}

/// One `send` call. Created off-loop, then touched only on the loop thread.
final class ClientExchange: @unchecked Sendable {
    let id: UInt64
    let key: String
    let address: SocketAddress
    /// The host name TLS checks the certificate against; nil for plain http.
    let tlsHost: String?
    let head: [UInt8]
    /// The caller's body, shared, not copied: a receipt is in memory once per request in flight.
    let body: [UInt8]
    let isHead: Bool
    let deadline: UInt64
    /// Set by a cancelled caller on its own thread; read by `start` on the loop. Inline, not a lock
    /// object: one is made per request.
    let cancelled = Atomic<Bool>(false)
    /// Set once by `perform`, before the exchange is posted to the loop.
    var continuation: CheckedContinuation<HTTPClientResponse, Error>?
    var connection: ClientConnection?
    var retried = false

    init(id: UInt64, key: String, address: SocketAddress, tlsHost: String?, head: [UInt8], body: [UInt8], isHead: Bool, deadline: UInt64) {
        self.id = id
        self.key = key
        self.address = address
        self.tlsHost = tlsHost
        self.head = head
        self.body = body
        self.isHead = isHead
        self.deadline = deadline
    }

    /// Resumes the caller exactly once.
    func finish(_ result: Result<HTTPClientResponse, HTTPClientError>) {
        continuation?.resume(with: result.mapError { $0 as Error })
        continuation = nil
    }
}

/// A client socket; loop-thread only.
final class ClientConnection {
    enum State { case connecting, handshaking, active, idle }

    let fd: Int32
    let key: String
    let tlsHost: String?
    var tls: TLSSession?
    /// Encrypted bytes not yet taken by the socket (https only).
    var cipherOut: [UInt8] = []
    var cipherOffset = 0
    var token: UInt64 = 0
    var state = State.connecting
    var closed = false
    var reused = false
    var interest: UInt32 = 0
    var out = OutgoingBytes()
    var parser = HTTPResponseParser(isHeadRequest: false, maxBodyBytes: 0)
    var exchange: ClientExchange?
    var idleSince: UInt64 = 0

    init(fd: Int32, key: String, tlsHost: String?) {
        self.fd = fd
        self.key = key
        self.tlsHost = tlsHost
    }

    /// Request bytes still to reach the socket, in plain or encrypted form.
    var hasUnsentBytes: Bool { out.hasUnsent || cipherOffset < cipherOut.count }
}

/// A request on its way out: our head and the caller's body kept apart, so the body is sent from
/// the caller's buffer rather than from a copy behind the head.
struct OutgoingBytes {
    private(set) var head: [UInt8] = []
    private(set) var body: [UInt8] = []
    private var sent = 0

    init() {}
    init(head: [UInt8], body: [UInt8]) {
        self.head = head
        self.body = body
    }

    var hasUnsent: Bool { sent < head.count + body.count }

    mutating func markSent(_ count: Int) { sent += count }

    /// What is left of the head and of the body (either may be empty).
    func withUnsent<T>(_ work: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) -> T) -> T {
        let headStart = min(sent, head.count), bodyStart = max(0, sent - head.count)
        return head.withUnsafeBytes { head in
            body.withUnsafeBytes { body in
                work(UnsafeRawBufferPointer(rebasing: head[headStart...]), UnsafeRawBufferPointer(rebasing: body[bodyStart...]))
            }
        }
    }
}

/// The client's loop-thread side: pool, connects, writes, parsing, deadlines.
final class ClientCore: @unchecked Sendable {
    let loop: EventLoop
    private let config: SocketHTTPTransport.Configuration
    private let idleTimeout: UInt64
    private var exchanges: [UInt64: ClientExchange] = [:]
    private var idle: [String: [ClientConnection]] = [:]
    private let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 1)
    private let plainBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 1)
    /// Made on the first https request (loading the trust store costs milliseconds).
    private var tlsContext: TLSClientContext?

    init(config: SocketHTTPTransport.Configuration, loop: EventLoop) {
        self.config = config
        self.loop = loop
        idleTimeout = config.idleTimeout.nanoseconds
        loop.setSweep(granularity: 10_000_000) { self.sweep() }
        loop.onExit = { self.closeAll() }
    }

    deinit {
        readBuffer.deallocate()
        plainBuffer.deallocate()
    }

    func start(_ exchange: ClientExchange) {
        if exchange.cancelled.load(ordering: .acquiring) { return exchange.finish(.failure(.cancelled)) }
        if monotonicNanos() >= exchange.deadline { return exchange.finish(.failure(.timeout)) }
        exchanges[exchange.id] = exchange
        loop.noteDeadline(exchange.deadline)
        if let conn = idle[exchange.key]?.popLast() {
            conn.reused = true
            begin(conn, exchange)
        } else {
            connect(exchange)
        }
    }

    func cancel(_ id: UInt64) {
        guard let exchange = exchanges[id] else { return }
        fail(exchange, .cancelled)
    }

    func closeAll() {
        for exchange in exchanges.values { fail(exchange, .connectionFailed("transport is shut down")) }
        for conn in idle.values.joined() { close(conn) }
        idle = [:]
    }

    // MARK: connections

    private func connect(_ exchange: ClientExchange) {
        let fd = Socket.makeStream(family: exchange.address.family)
        guard fd >= 0 else { return fail(exchange, .connectionFailed("socket: \(errnoDescription())")) }
        Socket.setNoDelay(fd)
        let rc = exchange.address.withSockaddr { Glibc.connect(fd, $0, $1) }
        if rc != 0 && errno != EINPROGRESS {
            let why = errnoDescription()
            Glibc.close(fd)
            return fail(exchange, .connectionFailed(why))
        }
        let conn = ClientConnection(fd: fd, key: exchange.key, tlsHost: exchange.tlsHost)
        conn.interest = EventLoop.writable
        conn.token = loop.register(fd: fd, events: conn.interest) { events in self.onEvents(conn, events) }
        attach(conn, exchange)
        conn.state = .connecting
    }

    private func begin(_ conn: ClientConnection, _ exchange: ClientExchange) {
        attach(conn, exchange)
        conn.state = .active
        flush(conn)
    }

    private func attach(_ conn: ClientConnection, _ exchange: ClientExchange) {
        conn.exchange = exchange
        exchange.connection = conn
        conn.out = OutgoingBytes(head: exchange.head, body: exchange.body)
        conn.parser = HTTPResponseParser(isHeadRequest: exchange.isHead, maxBodyBytes: config.maxResponseBodyBytes)
    }

    private func onEvents(_ conn: ClientConnection, _ events: UInt32) {
        switch conn.state {
        case .idle:
            // A pooled connection is readable only when the server closed it (or misbehaved).
            removeIdle(conn)
            close(conn)
        case .connecting:
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(conn.fd, SOL_SOCKET, SO_ERROR, &error, &length)
            guard error == 0 else {
                let exchange = conn.exchange
                close(conn)
                if let exchange { fail(exchange, .connectionFailed(errnoDescription(error))) }
                return
            }
            if let host = conn.tlsHost {
                startTLS(conn, host: host)
            } else {
                conn.state = .active
                flush(conn)
            }
        case .handshaking:
            if events & EventLoop.writable != 0 { sendCiphertext(conn) }
            if !conn.closed, events & (EventLoop.readable | EventLoop.hangup) != 0 {
                guard readCiphertext(conn) else { return }
                advanceHandshake(conn)
            }
        case .active:
            if events & EventLoop.writable != 0 { flush(conn) }
            if !conn.closed, events & (EventLoop.readable | EventLoop.hangup) != 0 { readResponse(conn) }
        }
    }

    private func flush(_ conn: ClientConnection) {
        if let tls = conn.tls { return flushTLS(conn, tls) }
        guard sendRequest(conn) else { return }
        if !conn.out.hasUnsent { conn.out = OutgoingBytes() }
        // Read all along: a server may answer (413, 400) before taking the whole body.
        setInterest(conn, EventLoop.readable | (conn.out.hasUnsent ? EventLoop.writable : 0))
    }

    /// The plain request's head and body as far as the socket takes them now (one sendmsg for
    /// both); false when the connection broke (already handled: retried or failed).
    private func sendRequest(_ conn: ClientConnection) -> Bool {
        sendAvailable(conn, pending: { conn.out.hasUnsent }, attempt: { conn.out.withUnsent { Socket.send(conn.fd, $0, $1) } },
                      sent: { conn.out.markSent($0) })
    }

    /// Sends ciphertext `bytes[offset...]` as far as the socket takes it now; false when the connection
    /// broke (already handled: retried or failed).
    private func send(_ conn: ClientConnection, _ bytes: [UInt8], from offset: inout Int) -> Bool {
        sendAvailable(conn, pending: { offset < bytes.count },
                      attempt: { bytes.withUnsafeBytes { Socket.send(conn.fd, UnsafeRawBufferPointer(rebasing: $0[offset...])) } },
                      sent: { offset += $0 })
    }

    /// The one send loop: `attempt` sends what is left (send(2)'s result) until nothing is pending or
    /// the socket would block; a broken connection is handled here and reported as false.
    private func sendAvailable(_ conn: ClientConnection, pending: () -> Bool, attempt: () -> Int, sent: (Int) -> Void) -> Bool {
        while pending() {
            let n = attempt()
            if n > 0 { sent(n); continue }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && Socket.isWouldBlock(errno) { break }
            connectionBroke(conn)
            return false
        }
        return true
    }

    private func readResponse(_ conn: ClientConnection) {
        if conn.tls != nil { return readTLSResponse(conn) }
        let n = read(conn.fd, readBuffer.baseAddress, readBuffer.count)
        if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) { return }
        guard let exchange = conn.exchange else { return close(conn) }
        do {
            let complete: HTTPResponseParser.Complete?
            if n > 0 {
                complete = try conn.parser.feed(UnsafeRawBufferPointer(rebasing: readBuffer[0..<n]))
            } else if n == 0 {
                complete = try conn.parser.finishAtEOF()
            } else {
                return connectionBroke(conn)
            }
            guard let complete else { return }
            finish(conn, exchange, complete, atEOF: n == 0)
        } catch .connectionReset {
            connectionBroke(conn)
        } catch {
            close(conn)
            fail(exchange, error)
        }
    }

    private func finish(_ conn: ClientConnection, _ exchange: ClientExchange, _ complete: HTTPResponseParser.Complete, atEOF: Bool) {
        exchanges[exchange.id] = nil
        conn.exchange = nil
        exchange.connection = nil
        exchange.finish(.success(complete.response))
        // An early answer (e.g. 413) can arrive before our body is fully sent: never reuse that.
        if complete.reusable && !atEOF && !conn.hasUnsentBytes { park(conn) } else { close(conn) }
    }

    // MARK: TLS

    private func startTLS(_ conn: ClientConnection, host: String) {
        do {
            if tlsContext == nil { tlsContext = try TLSClientContext(trustedCertificatesFile: config.trustedCertificatesFile) }
            conn.tls = try TLSSession(context: tlsContext!, host: host)
        } catch {
            let exchange = conn.exchange
            close(conn)
            if let exchange { fail(exchange, error) }
            return
        }
        conn.state = .handshaking
        advanceHandshake(conn)
    }

    private func advanceHandshake(_ conn: ClientConnection) {
        guard let tls = conn.tls else { return }
        let progress = tls.handshake()
        conn.cipherOut += tls.takeCiphertext()
        switch progress {
        case .done:
            conn.state = .active
            flush(conn)
        case .needsMoreInput:
            sendCiphertext(conn)
        case .failed(let why):
            tlsFailed(conn, why)
        }
    }

    private func tlsFailed(_ conn: ClientConnection, _ why: String) {
        let exchange = conn.exchange
        close(conn)
        if let exchange { fail(exchange, .tlsFailure(why)) }
    }

    /// Encrypts what is left of the request, then sends ciphertext as far as the socket takes it.
    private func flushTLS(_ conn: ClientConnection, _ tls: TLSSession) {
        if conn.out.hasUnsent {
            // encrypt(_:) of an empty buffer is a no-op that reports no failure.
            let failure = conn.out.withUnsent { head, body in tls.encrypt(head) ?? tls.encrypt(body) }
            if let failure { return tlsFailed(conn, failure) }
            conn.out = OutgoingBytes()
            conn.cipherOut += tls.takeCiphertext()
        }
        sendCiphertext(conn)
    }

    /// Ciphertext to the socket; interest follows what is still pending. Reads stay on throughout.
    private func sendCiphertext(_ conn: ClientConnection) {
        guard send(conn, conn.cipherOut, from: &conn.cipherOffset) else { return }
        if conn.cipherOffset == conn.cipherOut.count { conn.cipherOut = []; conn.cipherOffset = 0 }
        setInterest(conn, EventLoop.readable | (conn.cipherOut.isEmpty ? 0 : EventLoop.writable))
    }

    /// Moves ciphertext from the socket into the session; false when the connection was closed
    /// (peer gone during the handshake).
    private func readCiphertext(_ conn: ClientConnection) -> Bool {
        let n = read(conn.fd, readBuffer.baseAddress, readBuffer.count)
        if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) { return true }
        guard n > 0 else {
            tlsFailed(conn, n == 0 ? "peer closed the connection during the TLS handshake" : errnoDescription())
            return false
        }
        conn.tls?.received(UnsafeRawBufferPointer(rebasing: readBuffer[0..<n]))
        return true
    }

    /// Reads ciphertext, then decrypts everything it completes: OpenSSL may hold a whole record
    /// that epoll will never report again, so decryption runs until it needs more input.
    private func readTLSResponse(_ conn: ClientConnection) {
        guard let tls = conn.tls else { return }
        let n = read(conn.fd, readBuffer.baseAddress, readBuffer.count)
        if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) { return }
        guard let exchange = conn.exchange else { return close(conn) }
        if n < 0 { return connectionBroke(conn) }
        if n > 0 { tls.received(UnsafeRawBufferPointer(rebasing: readBuffer[0..<n])) }
        do {
            decrypting: while true {
                switch tls.decrypt(into: plainBuffer) {
                case .bytes(let count):
                    if let complete = try conn.parser.feed(UnsafeRawBufferPointer(rebasing: plainBuffer[0..<count])) {
                        return finish(conn, exchange, complete, atEOF: false)
                    }
                case .needsMoreInput:
                    break decrypting
                case .closed:
                    return finish(conn, exchange, try conn.parser.finishAtEOF(), atEOF: true)
                case .failed(let why):
                    return tlsFailed(conn, why)
                }
            }
            // Anything OpenSSL wants to say back (e.g. a key update) goes out now.
            conn.cipherOut += tls.takeCiphertext()
            if !conn.cipherOut.isEmpty { sendCiphertext(conn) }
            if n == 0 { finish(conn, exchange, try conn.parser.finishAtEOF(), atEOF: true) }
        } catch .connectionReset {
            connectionBroke(conn)
        } catch {
            close(conn)
            fail(exchange, error)
        }
    }

    /// EOF or reset before a full response. A pooled connection the server had already closed
    /// fails before any byte arrives; such a request was never processed, so it is retried once
    /// on a fresh connection.
    private func connectionBroke(_ conn: ClientConnection) {
        let exchange = conn.exchange
        let retry = conn.reused && !conn.parser.receivedAnything && exchange?.retried == false
        close(conn)
        guard let exchange else { return }
        if retry {
            exchange.retried = true
            exchange.connection = nil
            connect(exchange)
        } else {
            fail(exchange, .connectionReset)
        }
    }

    private func park(_ conn: ClientConnection) {
        guard idle[conn.key, default: []].count < config.maxIdleConnectionsPerHost else { return close(conn) }
        conn.state = .idle
        conn.idleSince = monotonicNanos()
        setInterest(conn, EventLoop.readable)
        // Appended in place: a copy of the list here would copy thousands of pooled connections per response.
        idle[conn.key, default: []].append(conn)
        loop.noteDeadline(conn.idleSince + idleTimeout)
    }

    private func removeIdle(_ conn: ClientConnection) {
        idle[conn.key]?.removeAll { $0 === conn }
        if idle[conn.key]?.isEmpty == true { idle[conn.key] = nil }
    }

    private func setInterest(_ conn: ClientConnection, _ events: UInt32) {
        guard events != conn.interest else { return }
        conn.interest = events
        loop.modify(fd: conn.fd, token: conn.token, events: events)
    }

    private func close(_ conn: ClientConnection) {
        guard !conn.closed else { return }
        conn.closed = true
        conn.exchange = nil
        loop.deregister(fd: conn.fd, token: conn.token)
        Glibc.close(conn.fd)
    }

    private func fail(_ exchange: ClientExchange, _ error: HTTPClientError) {
        exchanges[exchange.id] = nil
        if let conn = exchange.connection { close(conn) }  // a half-used connection is never reused
        exchange.connection = nil
        exchange.finish(.failure(error))
    }

    // MARK: deadlines

    private func sweep() -> UInt64? {
        let now = monotonicNanos()
        var next: UInt64?
        for exchange in exchanges.values {
            if exchange.deadline <= now {
                fail(exchange, .timeout)
            } else {
                next = min(next ?? .max, exchange.deadline)
            }
        }
        for (key, list) in idle {
            let (expired, kept) = (list.filter { $0.idleSince + idleTimeout <= now }, list.filter { $0.idleSince + idleTimeout > now })
            expired.forEach(close)
            idle[key] = kept.isEmpty ? nil : kept
            if let oldest = kept.first { next = min(next ?? .max, oldest.idleSince + idleTimeout) }
        }
        return next
    }
}
#endif

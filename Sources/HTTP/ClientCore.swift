#if canImport(Glibc)
import Glibc
import Foundation
import Synchronization

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

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
#endif

import Foundation

/// Picks the transport by scheme (`plain` for http, `tls` for https) and optionally refuses plain
/// HTTP to non-loopback hosts. By default both are one `SocketHTTPTransport`, TLS on OpenSSL:
/// URLSession on Linux stalls with thousands of requests in flight and Apple's seconds of
/// latency (`receipt-worker bench transport` compares the two).
public struct RoutingHTTPTransport: HTTPTransport {
    public let plain: HTTPTransport
    public let tls: HTTPTransport
    public let plainHTTPLoopbackOnly: Bool

    public init(plain: HTTPTransport, tls: HTTPTransport, plainHTTPLoopbackOnly: Bool = false) {
        self.plain = plain
        self.tls = tls
        self.plainHTTPLoopbackOnly = plainHTTPLoopbackOnly
    }

    #if canImport(Glibc)
    /// One `SocketHTTPTransport` for both schemes (one event loop, one keep-alive pool).
    public init(plainHTTPLoopbackOnly: Bool = false, configuration: SocketHTTPTransport.Configuration = .init()) throws {
        let transport = try SocketHTTPTransport(configuration: configuration)
        self.init(plain: transport, tls: transport, plainHTTPLoopbackOnly: plainHTTPLoopbackOnly)
    }
    #endif

    public func send(_ request: HTTPClientRequest, timeout: Duration) async throws -> HTTPClientResponse {
        switch request.url.scheme?.lowercased() {
        case "https":
            return try await tls.send(request, timeout: timeout)
        case "http":
            let host = request.url.host ?? ""
            if plainHTTPLoopbackOnly && !isLoopbackHost(host) {
                throw HTTPClientError.insecureTransportNotAllowed(host: host)
            }
            return try await plain.send(request, timeout: timeout)
        default:
            throw HTTPClientError.unsupportedURL(request.url.absoluteString)
        }
    }
}

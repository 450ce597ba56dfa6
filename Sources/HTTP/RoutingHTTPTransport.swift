import Foundation

/// Picks the transport by scheme: `http://` → the socket transport (simulator, local tests),
/// `https://` → URLSession (Apple). Optionally refuses plain HTTP to non-loopback hosts.
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
    /// A `SocketHTTPTransport` for http and a `URLSessionTransport` for https.
    public init(plainHTTPLoopbackOnly: Bool = false) throws {
        self.init(plain: try SocketHTTPTransport(), tls: URLSessionTransport(), plainHTTPLoopbackOnly: plainHTTPLoopbackOnly)
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

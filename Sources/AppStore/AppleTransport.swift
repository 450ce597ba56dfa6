import HTTP

/// How every Apple client reaches the network, in one place: plain HTTP only to loopback
/// (apple-sim), TLS verification never touched, and one vocabulary for transport failures.
enum AppleTransport {
    /// `transport` (tests, benchmarks) or the default (one socket transport: http to loopback, https with verified TLS,
    /// keeping up to `idleConnectionsPerHost` keep-alive connections), wrapped so plain http can only reach loopback hosts.
    static func make(_ transport: HTTPTransport?, idleConnectionsPerHost: Int? = nil) throws -> HTTPTransport {
        if let transport { return RoutingHTTPTransport(plain: transport, tls: transport, plainHTTPLoopbackOnly: true) }
        var configuration = SocketHTTPTransport.Configuration()
        if let idleConnectionsPerHost { configuration.maxIdleConnectionsPerHost = idleConnectionsPerHost }
        return try RoutingHTTPTransport(plainHTTPLoopbackOnly: true, configuration: configuration)
    }

    /// Retry reason and metric label for a transport failure (messages never carry the body).
    static func describe(_ error: Error) -> (reason: String, label: String) {
        switch error as? HTTPClientError {
        case .timeout: ("timeout", "timeout")
        case .connectionFailed, .connectionReset: ("connection_error", "connection_error")
        case .invalidResponse: ("malformed_response", "malformed")
        case .tlsFailure: ("tls_error", "tls_error")
        case .cancelled: ("cancelled", "cancelled")
        case .insecureTransportNotAllowed, .unsupportedURL, .invalidRequest: ("transport_refused", "transport_refused")
        case nil: error is CancellationError ? ("cancelled", "cancelled") : ("connection_error", "connection_error")
        }
    }
}

import Foundation

public struct HTTPClientRequest: Sendable {
    public var method: String
    public var url: URL
    public var headers: HTTPHeaderFields
    public var body: [UInt8]

    public init(method: String = "GET", url: URL, headers: HTTPHeaderFields = [], body: [UInt8] = []) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }

    public func header(_ name: String) -> String? { headers.firstValue(name) }
}

public struct HTTPClientResponse: Sendable {
    public var status: Int
    public var headers: HTTPHeaderFields
    public var body: [UInt8]

    public init(status: Int, headers: HTTPHeaderFields = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public func header(_ name: String) -> String? { headers.firstValue(name) }
}

public enum HTTPClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The per-request deadline passed (the connection is discarded).
    case timeout
    /// No connection could be made (refused, unreachable, DNS).
    case connectionFailed(String)
    /// The peer closed or reset the connection before the response was complete.
    case connectionReset
    /// The peer answered something that is not a valid HTTP/1.x response.
    case invalidResponse(String)
    /// TLS handshake or certificate verification failed (never bypassed).
    case tlsFailure(String)
    /// Plain HTTP to a non-loopback host while the policy requires loopback.
    case insecureTransportNotAllowed(host: String)
    case unsupportedURL(String)
    /// The request itself cannot be sent (e.g. CR/LF inside a header value).
    case invalidRequest(String)
    case cancelled

    public var description: String {
        switch self {
        case .timeout: "request timed out"
        case .connectionFailed(let why): "connection failed: \(why)"
        case .connectionReset: "connection reset by peer"
        case .invalidResponse(let why): "invalid response: \(why)"
        case .tlsFailure(let why): "TLS failure: \(why)"
        case .insecureTransportNotAllowed(let host): "plain http to non-loopback host \(host) refused"
        case .unsupportedURL(let url): "unsupported URL: \(url)"
        case .invalidRequest(let why): "invalid request: \(why)"
        case .cancelled: "request cancelled"
        }
    }
}

public protocol HTTPTransport: Sendable {
    func send(_ request: HTTPClientRequest, timeout: Duration) async throws -> HTTPClientResponse
}

/// True for 127.0.0.0/8, ::1 (also written [::1] or as IPv4-mapped) and "localhost": the only
/// hosts plain HTTP may reach without exposing secrets on the wire.
public func isLoopbackHost(_ host: String) -> Bool {
    // Asked of every plain-HTTP request (apple-sim, tests): the usual spellings without a copy.
    if host == "127.0.0.1" || host == "localhost" || host == "::1" { return true }
    var h = host.lowercased()
    if h.hasPrefix("["), h.hasSuffix("]") { h = String(h.dropFirst().dropLast()) }
    if h == "localhost" || h.hasSuffix(".localhost") || h == "::1" || h == "0:0:0:0:0:0:0:1" { return true }
    if h.hasPrefix("::ffff:") { h = String(h.dropFirst(7)) }
    let octets = h.split(separator: ".", omittingEmptySubsequences: false)
    guard octets.count == 4, octets.allSatisfy({ !$0.isEmpty && $0.count <= 3 && $0.allSatisfy(\.isASCII) && UInt8($0) != nil }) else {
        return false
    }
    return octets[0] == "127"
}

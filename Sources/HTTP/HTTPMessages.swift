import Foundation

/// Header fields in arrival order; names compare case-insensitively (RFC 9110 §5.1).
public typealias HTTPHeaderFields = [(name: String, value: String)]

extension Array where Element == (name: String, value: String) {
    /// The first value of `name`, compared case-insensitively.
    func firstValue(_ name: String) -> String? {
        first { $0.name.equalsIgnoringASCIICase(name) }?.value
    }
}

/// A complete request as handed to a handler (the body is fully read; no streaming needed here).
public struct HTTPRequest: Sendable {
    public var method: String
    /// The path without the query string, still percent-encoded.
    public var path: String
    public var query: String?
    public var version: String
    public var headers: HTTPHeaderFields
    public var body: [UInt8]
    /// The peer's numeric address ("127.0.0.1", "::1"), set by the server; nil when unknown.
    /// Used for per-address limits and to decide whether a proxy may vouch for a user.
    public var remoteAddress: String?

    public init(method: String, path: String, query: String? = nil, version: String = "HTTP/1.1",
                headers: HTTPHeaderFields = [], body: [UInt8] = [], remoteAddress: String? = nil) {
        self.method = method
        self.path = path
        self.query = query
        self.version = version
        self.headers = headers
        self.body = body
        self.remoteAddress = remoteAddress
    }

    public func header(_ name: String) -> String? { headers.firstValue(name) }
}

public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: HTTPHeaderFields
    public var body: [UInt8]
    /// The route pattern that produced this response (set by `HTTPRouter`), reported to the
    /// metrics hook instead of the raw path so label cardinality stays bounded. Not sent.
    public var route: String?

    public init(status: Int, headers: HTTPHeaderFields = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public func header(_ name: String) -> String? { headers.firstValue(name) }

    public static func json(status: Int, _ data: [UInt8]) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/json")], body: data)
    }

    public static func json(status: Int, _ data: Data) -> HTTPResponse {
        json(status: status, [UInt8](data))
    }

    public static func text(status: Int, _ s: String, contentType: String = "text/plain; charset=utf-8") -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", contentType)], body: Array(s.utf8))
    }

    /// The `{"error": "..."}` body every server-generated failure uses.
    public static func error(status: Int, _ message: String) -> HTTPResponse {
        let encoded = (try? JSONSerialization.data(withJSONObject: ["error": message])) ?? Data("{}".utf8)
        return json(status: status, encoded)
    }
}

public typealias HTTPHandler = @Sendable (HTTPRequest) async -> HTTPResponse

enum HTTPStatus {
    static func reason(_ status: Int) -> String {
        switch status {
        case 100: "Continue"
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 204: "No Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 304: "Not Modified"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 411: "Length Required"
        case 413: "Content Too Large"
        case 415: "Unsupported Media Type"
        case 422: "Unprocessable Content"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        case 505: "HTTP Version Not Supported"
        default: "Status \(status)"
        }
    }

    /// 1xx, 204 and 304 never carry a body (nor, for 1xx/204, a Content-Length).
    static func forbidsBody(_ status: Int) -> Bool {
        status < 200 || status == 204 || status == 304
    }
}

extension StringProtocol {
    /// ASCII case-insensitive equality. Header names and tokens are ASCII; Foundation's
    /// locale-aware compare is costly on the request path.
    func equalsIgnoringASCIICase(_ other: some StringProtocol) -> Bool {
        let left = utf8, right = other.utf8
        guard left.count == right.count else { return false }
        func fold(_ byte: UInt8) -> UInt8 { byte >= 65 && byte <= 90 ? byte + 32 : byte }
        return zip(left, right).allSatisfy { fold($0) == fold($1) }
    }
}

/// Why an App Store Server API call did not succeed, and what the caller should do about it.
/// Texts are safe to store and log: never the bearer token, never a response body.
public struct AppStoreAPIError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// Try later; `after` when Apple (or the fleet limit) said how long.
        case retry(after: Duration?)
        /// Permanent for this request (4xx): retrying cannot help.
        case rejected
        /// 4040010: Apple does not know the transaction.
        case notFound
        /// Our credentials were refused (401/403): an operator must fix the APPSTORE_* settings.
        case configError
    }

    public var kind: Kind
    /// A short machine word: "rate_limited", "fleet_rate_limit", "http_503", "api_4000035", ...
    public var reason: String
    /// Apple's errorCode, else the HTTP status (nil for transport failures).
    public var status: Int?
    public var detail: String

    public init(_ kind: Kind, reason: String, status: Int?, detail: String) {
        self.kind = kind
        self.reason = reason
        self.status = status
        self.detail = detail
    }

    public var description: String { detail.isEmpty ? reason : "\(reason): \(detail)" }

    public var isRetryable: Bool { if case .retry = kind { true } else { false } }
    public var retryAfter: Duration? { if case .retry(let after) = kind { after } else { nil } }
}

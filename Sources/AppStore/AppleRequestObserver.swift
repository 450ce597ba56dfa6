/// How the client reports each Apple call without depending on a metrics library; the owner maps
/// it onto `iap_apple_requests_total{endpoint,result}` and the duration histogram.
public protocol AppleRequestObserver: Sendable {
    /// `endpoint` is "production" or "sandbox"; `result` is a bounded word such as "ok",
    /// "status_21007", "http_503", "timeout", "connection_error", "malformed".
    func appleRequestFinished(endpoint: String, result: String, seconds: Double)
    /// Apple announced the end of an API (`Deprecation` or `Sunset` header).
    func appleDeprecationNotice(header: String, value: String)
    /// One App Store Server API answer by endpoint family (`transaction_info`, `notification_history`,
    /// `consumption`, `order_lookup`) and the same bounded result word.
    func appStoreAPIRequestFinished(endpoint: String, result: String)
    /// A request held back: `source` is "apple_429" (Apple throttled us; the fleet pauses) or
    /// "fleet_limit" (no slot within the wait budget).
    func appStoreAPIThrottled(family: String, source: String)
}

extension AppleRequestObserver {
    public func appStoreAPIRequestFinished(endpoint: String, result: String) {}
    public func appStoreAPIThrottled(family: String, source: String) {}
}

/// The default: reports go nowhere.
public struct NoAppleRequestObserver: AppleRequestObserver {
    public init() {}
    public func appleRequestFinished(endpoint: String, result: String, seconds: Double) {}
    public func appleDeprecationNotice(header: String, value: String) {}
}

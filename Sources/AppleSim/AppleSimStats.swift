/// Bookkeeping for end-to-end checks: what the simulator answered, and which transactions it
/// told a client were paid ("what Apple says was paid").
public struct AppleSimStats: Sendable, Equatable {
    public private(set) var requests = 0
    /// "ok", "status_21007", "http_503", "outage", "hang", "reset", "malformed", ...
    public private(set) var byResult: [String: Int] = [:]
    public private(set) var byEndpoint: [String: Int] = [:]
    /// Distinct transactions answered with status 0 and no cancellation.
    public private(set) var paid: Set<String> = []
    public private(set) var revoked: Set<String> = []

    mutating func record(endpoint: String, result: String) {
        requests += 1
        byEndpoint[endpoint, default: 0] += 1
        byResult[result, default: 0] += 1
    }

    mutating func recordAnswered(paid newlyPaid: [String], revoked newlyRevoked: [String]) {
        paid.formUnion(newlyPaid)
        revoked.formUnion(newlyRevoked)
    }

    var json: [String: Any] {
        [
            "requests_total": requests,
            "by_result": byResult,
            "by_endpoint": byEndpoint,
            "paid_transactions": paid.count,
            "paid_transaction_ids": paid.sorted(),
            "revoked_transactions": revoked.count,
            "revoked_transaction_ids": revoked.sorted(),
        ]
    }
}

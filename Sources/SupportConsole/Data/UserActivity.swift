import Postgres

/// A buyer's page: orders, ledger (refunds are the revoked rows), alerts and latest jobs.
public struct UserActivity: Sendable {
    public let userID: String
    public let orders: [OrderRow]
    public let ledger: [LedgerRow]
    public let alerts: [AlertRow]
    public let jobs: [JobSummary]
    /// Older jobs follow (the page shows a link to them instead of silently stopping).
    public let moreJobs: Bool
    public let jobsBefore: Int?
    /// Apple order id lookups that named this buyer (a transaction of theirs, or a credit to them).
    public var lookups: [OrderLookupRow] = []

    public var refunds: [LedgerRow] { ledger.filter { $0.revokedAt != nil } }
    public var isEmpty: Bool { orders.isEmpty && ledger.isEmpty && alerts.isEmpty && jobs.isEmpty && lookups.isEmpty }
}

struct UserActivityStore: Sendable {
    let client: PostgresClient
    static let limit = 100

    static let ordersSQL = """
        SELECT order_id, product_id, quantity, status, created_at, credited_at, transaction_id
        FROM iap.orders WHERE user_id = $1 ORDER BY created_at DESC LIMIT $2
        """
    static let ledgerSQL = "SELECT \(LedgerRow.columns) FROM iap.credits WHERE user_id = $1 ORDER BY credited_at DESC LIMIT $2"
    static let alertsSQL = "SELECT \(AlertRow.columns) FROM iap.alerts WHERE user_id = $1 ORDER BY id DESC LIMIT $2"
    /// The buyer's own jobs and those that credited them or raised their alert without naming
    /// them (a notification, a late order match, a lookup), through credits_by_user and
    /// alerts_by_user; keyset paged by id.
    static let jobsSQL = """
        SELECT \(JobSummary.columns) FROM iap.jobs
        WHERE (user_id = $1 OR id = ANY(ARRAY(
            SELECT job_id FROM iap.credits WHERE user_id = $1 AND job_id IS NOT NULL
            UNION SELECT job_id FROM iap.alerts WHERE user_id = $1 AND job_id IS NOT NULL))) AND id < $3
        ORDER BY id DESC LIMIT $2
        """

    static let lookupsSQL = "SELECT \(OrderLookupRow.columns) FROM iap.apple_order_lookups WHERE user_id = $1 ORDER BY id DESC LIMIT $2"

    func load(_ userID: String, jobsBefore: Int? = nil) async throws -> UserActivity {
        let jobs = try await ClosedUnpaid.mark(try await client.query(Self.jobsSQL, [userID, Self.limit + 1, jobsBefore ?? Int.max])
            .map(JobSummary.decode), client)
        return UserActivity(
            userID: userID,
            orders: try await client.query(Self.ordersSQL, [userID, Self.limit]).map(OrderRow.decode),
            ledger: try await client.query(Self.ledgerSQL, [userID, Self.limit]).map(LedgerRow.decode),
            alerts: try await client.query(Self.alertsSQL, [userID, Self.limit]).map(AlertRow.decode),
            jobs: Array(jobs.prefix(Self.limit)), moreJobs: jobs.count > Self.limit, jobsBefore: jobsBefore,
            lookups: try await client.query(Self.lookupsSQL, [userID, Self.limit]).map(OrderLookupRow.decode))
    }
}

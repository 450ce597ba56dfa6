import Postgres

/// A buyer's page: orders, ledger (refunds are the revoked rows), alerts and latest jobs.
public struct UserActivity: Sendable {
    public let userID: String
    public let orders: [OrderRow]
    public let ledger: [LedgerRow]
    public let alerts: [AlertRow]
    public let jobs: [JobSummary]

    public var refunds: [LedgerRow] { ledger.filter { $0.revokedAt != nil } }
    public var isEmpty: Bool { orders.isEmpty && ledger.isEmpty && alerts.isEmpty && jobs.isEmpty }
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
    static let jobsSQL = "SELECT \(JobSummary.columns) FROM iap.jobs WHERE user_id = $1 ORDER BY id DESC LIMIT $2"

    func load(_ userID: String) async throws -> UserActivity {
        UserActivity(
            userID: userID,
            orders: try await client.query(Self.ordersSQL, [userID, Self.limit]).map(OrderRow.decode),
            ledger: try await client.query(Self.ledgerSQL, [userID, Self.limit]).map(LedgerRow.decode),
            alerts: try await client.query(Self.alertsSQL, [userID, Self.limit]).map(AlertRow.decode),
            jobs: try await client.query(Self.jobsSQL, [userID, Self.limit]).map(JobSummary.decode))
    }
}

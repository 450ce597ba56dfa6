import Postgres

/// The alerts page: open alerts first, then resolved ones, each newest first with its own cursor.
struct AlertBoard: Sendable {
    let client: PostgresClient
    static let pageSize = 50

    /// `$4` narrows to one kind (the overview's alert-kind links) or is NULL for every kind.
    static let pageSQL = """
        SELECT \(AlertRow.columns) FROM iap.alerts WHERE state = $1 AND id < $2 AND ($4::text IS NULL OR kind = $4)
        ORDER BY id DESC LIMIT $3
        """

    func page(state: String, before: Int?, kind: String? = nil) async throws -> (alerts: [AlertRow], hasMore: Bool) {
        let rows = try await client.query(Self.pageSQL, [state, before ?? Int.max, Self.pageSize + 1, kind]).map(AlertRow.decode)
        return (Array(rows.prefix(Self.pageSize)), rows.count > Self.pageSize)
    }
}

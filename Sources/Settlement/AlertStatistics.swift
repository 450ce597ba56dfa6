import Postgres

/// Open alerts by kind: for `status` and the `iap_alerts_open{kind}` gauge.
public enum AlertStatistics {
    public static let kinds = AlertKind.allCases.map(\.rawValue)

    static let openByKindSQL = "SELECT kind, count(*)::bigint FROM iap.alerts WHERE state = 'open' GROUP BY kind"

    public static func openByKind(_ client: PostgresClient) async throws -> [String: Int] {
        var counts = Dictionary(uniqueKeysWithValues: kinds.map { ($0, 0) })
        for row in try await client.query(openByKindSQL) {
            counts[try row.decode(String.self, at: 0)] = try row.decode(Int.self, at: 1)
        }
        return counts
    }
}

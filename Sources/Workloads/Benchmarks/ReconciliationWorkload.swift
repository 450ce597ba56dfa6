import Foundation
import Postgres
import SupportConsole

/// `bench console`'s reconciliation book: two years of Pacific days, 20 in-app products a day, one
/// product-day in 50 with a gap and its alert (most resolved), so the Reconciliation page is timed
/// over a history a long-running system would have.
struct ReconciliationWorkload: Sendable {
    let days = 730
    let products = 20

    static let checksSQL = """
        INSERT INTO iap.reconciliation_checks (day, status, checked_at)
        SELECT current_date - n, CASE WHEN n % 7 = 0 THEN 'gap' ELSE 'clean' END, now() - n * interval '1 day'
        FROM generate_series(1, $1::int) AS n
        """
    static let daysSQL = """
        INSERT INTO iap.reconciliation_days (day, product_id, apple_units, apple_returns, credited, revoked, checked_at)
        SELECT current_date - n, 'product_' || p, 500 + p, p % 3, CASE WHEN n % 7 = 0 AND p = 1 THEN 497 ELSE 500 + p END, p % 3,
               now() - n * interval '1 day'
        FROM generate_series(1, $1::int) AS n, generate_series(1, $2::int) AS p
        """
    static let alertsSQL = """
        INSERT INTO iap.alerts (kind, product_id, reason, details, state, resolved_at, resolution)
        SELECT 'reconciliation_gap', 'product_1', 'Apple sold 4 more unit(s) than the ledger credited',
               jsonb_build_object('day', (current_date - n)::text, 'difference', '4'), CASE WHEN n > 7 THEN 'resolved' ELSE 'open' END,
               CASE WHEN n > 7 THEN now() END, CASE WHEN n > 7 THEN 'reconciled: Apple and the ledger agree' END
        FROM generate_series(7, $1::int, 7) AS n
        """

    func fill(_ client: PostgresClient) async throws {
        _ = try await client.query(Self.checksSQL, [days])
        _ = try await client.query(Self.daysSQL, [days, products])
        _ = try await client.query(Self.alertsSQL, [days])
    }
}

extension ReconciliationWorkload {
    /// "YYYY-MM-DD" of the UTC date `daysAgo` days before today (the database's current_date, near enough for a cursor).
    static func day(daysAgo: Int) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let date = calendar.date(byAdding: .day, value: -daysAgo, to: Date())!
        let c = calendar.dateComponents([.year, .month, .day], from: date)
        return String(format: "%04d-%02d-%02d", c.year!, c.month!, c.day!)
    }
}

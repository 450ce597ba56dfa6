import AppStore
import Foundation
import Postgres

/// One reconciled Pacific day: its outcome and, per in-app product, Apple's numbers against the ledger's.
struct ReconciledDay: Sendable {
    struct Product: Sendable {
        let productID: String
        let appleUnits: Int
        let appleReturns: Int
        let credited: Int
        let revoked: Int
        /// The `reconciliation_gap` alerts this product-day raised, newest first.
        var alerts: [(id: Int, state: String)] = []

        var gap: Int { appleUnits - credited }
        var returnsGap: Int { appleReturns - revoked }
    }

    /// "YYYY-MM-DD".
    let day: String
    /// clean, gap or not_available (iap.reconciliation_checks).
    let status: String
    /// Apple had no report past its publication time: no sales that day.
    let noSales: Bool
    let checkedAt: Date
    var products: [Product] = []
}

/// The Reconciliation page's data: days newest first by keyset on the day (never OFFSET), then their
/// product rows and gap alerts, each one statement backed by an index (ConsoleQueryPlanTests).
struct ReconciliationBoard: Sendable {
    let client: PostgresClient
    static let pageSize = 14
    /// Product rows read for one page at most (14 days of 350 products): a bound, not a page.
    static let productLimit = 5_000

    /// `$1`: the cursor, the oldest day of the previous page (`infinity` for the first).
    static let daysSQL = """
        SELECT day::text, status, no_sales, checked_at FROM iap.reconciliation_checks WHERE day < $1::date ORDER BY day DESC LIMIT $2
        """
    /// The page's days are a contiguous range: one backward range scan of the primary key (newest days
    /// first, so a bound cuts the oldest); each day's products are put back in order for display.
    static let productsSQL = """
        SELECT day::text, product_id, apple_units, apple_returns, credited, revoked FROM iap.reconciliation_days
        WHERE day >= $1::date AND day <= $2::date ORDER BY day DESC, product_id DESC LIMIT $3
        """
    /// Through alerts_reconciliation_gap_by_day (0021).
    static let alertsSQL = """
        SELECT details ->> 'day', product_id, id, state FROM iap.alerts
        WHERE kind = 'reconciliation_gap' AND details ->> 'day' = ANY ($1::text[]) ORDER BY id DESC LIMIT $2
        """

    func page(before: String?) async throws -> (days: [ReconciledDay], hasMore: Bool) {
        var days = try await client.query(Self.daysSQL, [before ?? "infinity", Self.pageSize + 1]).map { row in
            ReconciledDay(day: try row.decode(at: 0), status: try row.decode(at: 1), noSales: try row.decode(at: 2), checkedAt: try row.decode(at: 3))
        }
        let hasMore = days.count > Self.pageSize
        days = Array(days.prefix(Self.pageSize))
        guard let newest = days.first?.day, let oldest = days.last?.day else { return ([], false) }
        var products: [String: [ReconciledDay.Product]] = [:]
        for row in try await client.query(Self.productsSQL, [oldest, newest, Self.productLimit]) {
            products[try row.decode(String.self, at: 0), default: []].append(ReconciledDay.Product(
                productID: try row.decode(at: 1), appleUnits: try row.decode(at: 2), appleReturns: try row.decode(at: 3),
                credited: try row.decode(at: 4), revoked: try row.decode(at: 5)))
        }
        var alerts: [String: [(id: Int, state: String)]] = [:]
        for row in try await client.query(Self.alertsSQL, [days.map(\.day), Self.productLimit]) {
            alerts["\(try row.decode(String.self, at: 0))/\(try row.decode(String.self, at: 1))", default: []]
                .append((try row.decode(at: 2), try row.decode(at: 3)))
        }
        for index in days.indices {
            days[index].products = (products[days[index].day] ?? []).reversed().map { product in
                var product = product
                product.alerts = alerts["\(days[index].day)/\(product.productID)"] ?? []
                return product
            }
        }
        return (days, hasMore)
    }

    /// The `before` cursor: a real calendar date written YYYY-MM-DD, or a 400.
    static func cursor(_ text: String?) throws -> String? {
        guard let text else { return nil }
        guard ReportDay(text) != nil else { throw BadRequest("before must be a date written YYYY-MM-DD.") }
        return text
    }
}

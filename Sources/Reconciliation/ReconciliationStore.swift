import AppStore
import Foundation
import Postgres

/// The reconciliation's SQL, each statement in one place.
struct ReconciliationStore: Sendable {
    /// Per product: production credits whose Apple purchase date falls in [$1, $2), and production
    /// revocations in the same span. Each arm is a range scan of its index (0018), read index-only.
    static let ledgerSQL = """
        SELECT product_id, sum(credited)::bigint, sum(revoked)::bigint
        FROM (SELECT product_id, quantity AS credited, 0 AS revoked
              FROM iap.credits
              WHERE purchased_at >= $1 AND purchased_at < $2 AND environment = 'Production'
              UNION ALL
              SELECT product_id, 0, quantity
              FROM iap.credits
              WHERE revoked_at >= $1 AND revoked_at < $2 AND environment = 'Production') AS day
        GROUP BY product_id
        """

    static func ledgerStatement(_ day: ReportDay) -> PostgresStatement {
        PostgresStatement(ledgerSQL, [day.start, day.end])
    }

    /// Credited and revoked units per product on the Pacific `day`.
    func ledger(_ day: ReportDay, on connection: PostgresConnection) async throws -> [String: (credited: Int, revoked: Int)] {
        var byProduct: [String: (credited: Int, revoked: Int)] = [:]
        for row in try await connection.query(Self.ledgerSQL, [day.start, day.end]) {
            byProduct[try row.decode(String.self, at: 0)] = (try row.decode(Int.self, at: 1), try row.decode(Int.self, at: 2))
        }
        return byProduct
    }

    static let upsertDaysSQL = """
        INSERT INTO iap.reconciliation_days (day, product_id, apple_units, apple_returns, credited, revoked, checked_at)
        SELECT $1::date, p, u, r, c, v, now()
        FROM unnest($2::text[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[]) AS t (p, u, r, c, v)
        ON CONFLICT (day, product_id) DO UPDATE
        SET apple_units = excluded.apple_units, apple_returns = excluded.apple_returns, credited = excluded.credited,
            revoked = excluded.revoked, checked_at = excluded.checked_at
        """

    /// A product neither side shows any more (a credit moved to its right day) leaves the day:
    /// the day's rows are always exactly the last run's comparison.
    static let deleteStaleDaysSQL = """
        DELETE FROM iap.reconciliation_days WHERE day = $1::date AND NOT (product_id = ANY ($2::text[]))
        """

    func saveDays(_ day: ReportDay, _ products: [ReconciledProduct], on connection: PostgresConnection) async throws {
        _ = try await connection.query(Self.deleteStaleDaysSQL, [day.description, products.map(\.productID)])
        guard !products.isEmpty else { return }
        _ = try await connection.query(Self.upsertDaysSQL, [
            day.description, products.map(\.productID), products.map(\.appleUnits), products.map(\.appleReturns),
            products.map(\.credited), products.map(\.revoked),
        ])
    }

    /// One open gap alert per product and day; a re-run with other numbers updates its details.
    /// Returns the alert id and whether this run opened it.
    static let raiseGapSQL = """
        INSERT INTO iap.alerts (kind, product_id, reason, details, last_notified_at, notified_count)
        VALUES ('reconciliation_gap', $1, $2,
                jsonb_build_object('product', $1::text, 'day', $3::text, 'apple_units', $4::bigint, 'apple_returns', $5::bigint,
                                   'credited', $6::bigint, 'revoked', $7::bigint, 'difference', $8::bigint,
                                   'returns_difference', $9::bigint),
                now(), 1)
        ON CONFLICT (product_id, (details ->> 'day')) WHERE state = 'open' AND kind = 'reconciliation_gap'
        DO UPDATE SET details = excluded.details, reason = excluded.reason
        RETURNING id, (xmax = 0) AS opened
        """

    func raiseGap(_ day: ReportDay, _ p: ReconciledProduct, reason: String, on connection: PostgresConnection) async throws -> (id: Int, opened: Bool) {
        let row = try await connection.query(Self.raiseGapSQL, [
            p.productID, reason, day.description, p.appleUnits, p.appleReturns, p.credited, p.revoked, p.gap, p.returnsGap,
        ])[0]
        return (try row.decode(Int.self, at: 0), try row.decode(Bool.self, at: 1))
    }

    /// The day's open gap alerts for products that now match.
    static let resolveGapsSQL = """
        UPDATE iap.alerts SET state = 'resolved', resolved_at = now(), resolution = 'reconciled: Apple and the ledger agree'
        WHERE kind = 'reconciliation_gap' AND state = 'open' AND details ->> 'day' = $1 AND NOT (product_id = ANY ($2::text[]))
        RETURNING id
        """

    func resolveGaps(_ day: ReportDay, stillOpen: [String], on connection: PostgresConnection) async throws -> Int {
        try await connection.query(Self.resolveGapsSQL, [day.description, stillOpen]).count
    }
}

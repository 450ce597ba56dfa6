import AppStore
import Foundation
import Postgres

/// How a reconciled day stands, as the console's Reconciliation page lists it.
public enum ReconciliationOutcome: String, Sendable, CaseIterable {
    /// Every in-app product's units and returns agree with the ledger.
    case clean
    /// At least one product-day disagrees: it has an open `reconciliation_gap` alert.
    case gap
    /// Apple has not published the day yet; the leader tries again.
    case notAvailable = "not_available"
}

extension ReconciliationStore {
    /// One row per day: the last run's outcome (0021). "Not available" never overwrites a day that was compared.
    static let saveOutcomeSQL = """
        INSERT INTO iap.reconciliation_checks (day, status, no_sales, checked_at) VALUES ($1::date, $2, $3, now())
        ON CONFLICT (day) DO UPDATE SET status = excluded.status, no_sales = excluded.no_sales, checked_at = excluded.checked_at
        WHERE excluded.status <> 'not_available' OR reconciliation_checks.status = 'not_available'
        """

    func saveOutcome(_ day: ReportDay, _ outcome: ReconciliationOutcome, noSales: Bool, on connection: PostgresConnection) async throws {
        _ = try await connection.query(Self.saveOutcomeSQL, [day.description, outcome.rawValue, noSales])
    }

    /// What the history pull behind a shortfall found, added to the product-day's open gap alert: with
    /// `buyers_found` 0 nobody could be named and support has to find the buyers (docs/operations.md).
    static let noteRecoverySQL = """
        UPDATE iap.alerts
        SET details = details || jsonb_build_object('buyers_found', $3::bigint, 'buyers_without_transaction', $4::bigint,
                                                    'history_failures', $5::bigint, 'transactions_enqueued', $6::bigint)
        WHERE kind = 'reconciliation_gap' AND state = 'open' AND product_id = $1 AND details ->> 'day' = $2
        """

    func noteRecovery(_ day: ReportDay, _ productID: String, _ counts: GapRecovery.Counts, on connection: PostgresConnection) async throws {
        _ = try await connection.query(Self.noteRecoverySQL, [productID, day.description, counts.buyers + counts.unreachable,
                                                              counts.unreachable, counts.historyFailures, counts.enqueued])
    }
}

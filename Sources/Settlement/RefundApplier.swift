import Foundation
import Observability
import Postgres
import Queue

/// Revokes the credits whose REFUND came first (kept in `iap.refunds_before_credit` by the
/// REFUND's job), once the credit has landed: after an asynchronous failover that lost a credit,
/// the REFUND may be processed on the new primary before the receipt is credited again there.
public struct RefundApplier: MaintenanceTask {
    public let name = "refund_applier"
    public let interval: Double
    let client: PostgresClient
    let metrics: SettlementMetrics
    let logger: Logger

    public init(client: PostgresClient, interval: Double, metrics: SettlementMetrics, logger: Logger) {
        self.client = client
        self.interval = interval
        self.metrics = metrics
        self.logger = logger
    }

    /// Only kept refunds whose credit has landed are picked: refunds of transactions never
    /// credited stay waiting and never crowd out the batch. They are locked first, so a second
    /// leader (briefly) waits and then finds them applied. A credit already revoked (another
    /// REFUND of the same transaction) marks the kept refund applied without a second revocation.
    static let applySQL = """
        WITH waiting AS (
            SELECT r.transaction_id, r.revoked_at, r.revocation_reason FROM iap.refunds_before_credit AS r
            WHERE r.applied_at IS NULL AND EXISTS (SELECT 1 FROM iap.credits AS c WHERE c.transaction_id = r.transaction_id)
            ORDER BY r.transaction_id LIMIT 1000 FOR UPDATE OF r
        ), revoked AS (
            UPDATE iap.credits AS c SET revoked_at = coalesce(w.revoked_at, now()), revocation_reason = w.revocation_reason
            FROM waiting AS w
            WHERE c.transaction_id = w.transaction_id AND c.revoked_at IS NULL
            RETURNING c.transaction_id, c.order_id, c.user_id, c.revocation_reason
        ), applied AS (
            UPDATE iap.refunds_before_credit AS r SET applied_at = now()
            FROM waiting AS w WHERE r.transaction_id = w.transaction_id
        )
        SELECT transaction_id, order_id, user_id, revocation_reason FROM revoked
        """

    public func run(term: LeaderTerm) async throws {
        let revoked: [RevokedCredit] = try await WitnessedTransaction(client: client).run { connection in
            try await term.check(on: connection)
            return try await connection.query(Self.applySQL).map { row in
                RevokedCredit(transactionID: try row.decode(at: 0), orderID: try row.decode(at: 1), userID: try row.decode(at: 2),
                              reason: try row.decode(at: 3))
            }
        }
        for credit in revoked { credit.announce(logger: logger, metrics: metrics) }
    }
}

import Foundation
import Observability
import Postgres
import Queue

/// One alert as support sees it.
public struct AlertRecord: Sendable {
    public let id: Int
    public let kind: String
    public let transactionID: String?
    public let jobID: Int?
    public let userID: String?
    public let orderID: String?
    public let productID: String?
    public let reason: String
    public let detailsJSON: String
    public let state: String
    public let firstSeenAt: Date
    public let resolvedAt: Date?
    public let resolution: String?
}

public enum SupportError: Error, CustomStringConvertible, Equatable {
    case alertNotFound(Int)
    case alertNotOpen(Int)
    case notCreditable(String)
    case orderNotFound(String)
    case orderMismatch(String)
    /// Resolving a paid_not_credited alert leaves the buyer without what they paid for: it needs an explicit "yes".
    case noCreditNotConfirmed(Int)

    public var description: String {
        switch self {
        case .alertNotFound(let id): return "alert \(id) not found"
        case .alertNotOpen(let id): return "alert \(id) is already resolved"
        case .notCreditable(let why): return "alert cannot be credited: \(why)"
        case .orderNotFound(let order): return "order \(order) not found"
        case .orderMismatch(let why): return why
        case .noCreditNotConfirmed(let id):
            return "alert \(id) is a payment not credited: resolving it without crediting needs an explicit confirmation"
        }
    }
}

/// Work the caller adds to a support action's transaction (the console's audit row), so the
/// action and its record commit or roll back together.
public typealias AlsoInTransaction<Result> = @Sendable (PostgresConnection, Result) async throws -> Void

public enum ManualCreditResult: Sendable, Equatable {
    case credited
    /// The transaction was in the ledger already (credited by a retry or a colleague): the alert is resolved, nothing doubled.
    case alreadyCredited(orderID: String)
}

/// `receipt-worker alerts …`: what support staff do with alerts. Manual credits go
/// through the same ledger write as the worker, so a transaction is credited once.
public struct SupportDesk: Sendable {
    let client: PostgresClient
    let metrics: SettlementMetrics
    let logger: Logger

    public init(client: PostgresClient, metrics: SettlementMetrics, logger: Logger) {
        self.client = client
        self.metrics = metrics
        self.logger = logger
    }

    static let listSQL = """
        SELECT id, kind, transaction_id, job_id, user_id, order_id, product_id, reason, details::text, state,
               first_seen_at, resolved_at, resolution
        FROM iap.alerts WHERE ($1 = false OR state = 'open') ORDER BY id LIMIT $2
        """

    public func list(openOnly: Bool, limit: Int = 10_000) async throws -> [AlertRecord] {
        try await client.query(Self.listSQL, [openOnly, limit]).map(Self.decode)
    }

    static let lockAlertSQL = """
        SELECT id, kind, transaction_id, job_id, user_id, order_id, product_id, reason, details::text, state,
               first_seen_at, resolved_at, resolution
        FROM iap.alerts WHERE id = $1 FOR UPDATE
        """
    static let resolveSQL = "UPDATE iap.alerts SET state = 'resolved', resolved_at = now(), resolution = $2 WHERE id = $1 AND state = 'open'"

    /// Credits a paid_not_credited alert's transaction to `orderID` and resolves the alert; the ledger
    /// row and the resolution name `actor`, the person who credited.
    public func credit(alertID: Int, orderID: String, actor: String,
                       alsoInTransaction: AlsoInTransaction<ManualCreditResult>? = nil) async throws -> ManualCreditResult {
        let (result, transactionID): (ManualCreditResult, String) = try await WitnessedTransaction(client: client).run { connection in
            let alert = try await lockedOpenAlert(alertID, on: connection)
            guard alert.kind == AlertKind.paidNotCredited.rawValue else { throw SupportError.notCreditable("kind is \(alert.kind)") }
            guard let transactionID = alert.transactionID, let userID = alert.userID, let productID = alert.productID else {
                throw SupportError.notCreditable("no Apple transaction recorded")
            }
            let details = (try? JSONSerialization.jsonObject(with: Data(alert.detailsJSON.utf8)) as? [String: String]) ?? [:]
            let request = CreditRequest(
                transactionID: transactionID, originalTransactionID: details["original_transaction_id"], orderID: orderID, userID: userID,
                productID: productID, quantity: Int(details["quantity"] ?? "") ?? 1, environment: details["environment"] ?? "Production",
                purchasedAt: details["purchased_at_ms"].flatMap(Double.init).map { Date(timeIntervalSince1970: $0 / 1000) },
                jobID: alert.jobID, creditedBy: actor)
            let result: ManualCreditResult
            if case .alreadyInLedger(let existing) = try await ManualCredit().credit(request, on: connection) {
                _ = try await connection.query(Self.resolveSQL, [alertID, "already credited to order \(existing.orderID) (seen by \(actor))"])
                result = .alreadyCredited(orderID: existing.orderID)
            } else {
                _ = try await connection.query(Self.resolveSQL, [alertID, "credited to order \(orderID) by \(actor)"])
                result = .credited
            }
            try await alsoInTransaction?(connection, result)
            return (result, transactionID)
        }
        if result == .credited {
            metrics.credits.inc()
            logger.notice("credited_by_support", ["announcement_key": .string("credited_by_support:\(transactionID)"), "alert_id": .int(alertID),
                                                  "transaction_id": .string(transactionID), "order_id": .string(orderID), "actor": .string(actor)])
        }
        return result
    }

    /// Resolves an open alert with a note. A paid_not_credited alert needs `confirmedNoCredit`
    /// (checked under the alert's lock, so the rule holds whatever the form or script sent).
    public func resolve(alertID: Int, note: String, confirmedNoCredit: Bool, alsoInTransaction: AlsoInTransaction<Void>? = nil) async throws {
        try await WitnessedTransaction(client: client).run { connection in
            let alert = try await lockedOpenAlert(alertID, on: connection)
            if alert.kind == AlertKind.paidNotCredited.rawValue && !confirmedNoCredit { throw SupportError.noCreditNotConfirmed(alertID) }
            _ = try await connection.query(Self.resolveSQL, [alertID, note])
            try await alsoInTransaction?(connection, ())
        }
        logger.notice("alert_resolved", ["alert_id": .int(alertID)])
    }

    private func lockedOpenAlert(_ id: Int, on connection: PostgresConnection) async throws -> AlertRecord {
        guard let row = try await connection.query(Self.lockAlertSQL, [id]).first else { throw SupportError.alertNotFound(id) }
        let alert = try Self.decode(row)
        guard alert.state == "open" else { throw SupportError.alertNotOpen(id) }
        return alert
    }

    private static func decode(_ row: PostgresRow) throws -> AlertRecord {
        AlertRecord(id: try row.decode(at: 0), kind: try row.decode(at: 1), transactionID: try row.decode(at: 2),
                    jobID: try row.decode(at: 3), userID: try row.decode(at: 4), orderID: try row.decode(at: 5),
                    productID: try row.decode(at: 6), reason: try row.decode(at: 7), detailsJSON: try row.decode(at: 8),
                    state: try row.decode(at: 9), firstSeenAt: try row.decode(at: 10), resolvedAt: try row.decode(at: 11),
                    resolution: try row.decode(at: 12))
    }
}

import Foundation
import Observability
import Postgres

/// The alert kinds of `iap.alerts.kind`; each is also the log event name raised with it.
public enum AlertKind: String, Sendable, CaseIterable {
    case paidNotCredited = "paid_not_credited"
    case receiptReplay = "receipt_replay"
    case stuckVerification = "stuck_verification"
    case configError = "config_error"
    case consumptionFailed = "consumption_failed"
    /// Apple's sales report and the ledger disagree on a product-day.
    case reconciliationGap = "reconciliation_gap"
}

/// An alert to raise. `details` are the facts support needs to act (e.g. the Apple
/// transaction's product, quantity and environment, so `alerts credit` can credit it).
public struct NewAlert: Sendable {
    public var kind: AlertKind
    public var transactionID: String?
    public var jobID: Int?
    public var userID: String?
    public var orderID: String?
    public var productID: String?
    public var reason: String
    public var details: [String: String]

    public init(kind: AlertKind, transactionID: String? = nil, jobID: Int? = nil, userID: String? = nil, orderID: String? = nil,
                productID: String? = nil, reason: String, details: [String: String] = [:]) {
        self.kind = kind
        self.transactionID = transactionID
        self.jobID = jobID
        self.userID = userID
        self.orderID = orderID
        self.productID = productID
        self.reason = reason
        self.details = details
    }

    /// What a receiver deduplicates by: the same string for the same fact on any primary. Alert
    /// ids are not that: a primary promoted after losing commits may give one to another alert.
    public var announcementKey: String {
        switch (kind, transactionID, jobID) {
        case (.reconciliationGap, _, _): "reconciliation_gap:\(productID ?? ""):\(details["day"] ?? "")"
        case (_, let transaction?, _): "\(kind.rawValue):\(transaction)"
        case (_, nil, let job?): "\(kind.rawValue):job:\(job)"
        case (_, nil, nil): kind.rawValue
        }
    }

    var detailsJSON: String {
        let data = (try? JSONSerialization.data(withJSONObject: details, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    /// The fields every alert log line and webhook carries.
    func logFields(id: Int) -> [(key: String, value: LogValue)] {
        var fields: [(key: String, value: LogValue)] = [("alert_id", .int(id)), ("announcement_key", .string(announcementKey)),
                                                        ("reason", .string(reason))]
        if let jobID { fields.append(("job_id", .int(jobID))) }
        if let userID { fields.append(("user_id", .string(userID))) }
        if let orderID { fields.append(("order_id", .string(orderID))) }
        if let productID { fields.append(("product_id", .string(productID))) }
        if let transactionID { fields.append(("transaction_id", .string(transactionID))) }
        return fields
    }
}

/// Writes alerts (at most one open per kind and transaction, or per kind and job), logs
/// them at error level under their stable event name, counts them, and hands them to the
/// webhook. Runs inside the caller's transaction.
public struct AlertRecorder: Sendable {
    let logger: Logger
    let metrics: SettlementMetrics
    let webhook: AlertWebhook?

    public init(logger: Logger, metrics: SettlementMetrics, webhook: AlertWebhook?) {
        self.logger = logger
        self.metrics = metrics
        self.webhook = webhook
    }

    static let insertPerTransactionSQL = """
        INSERT INTO iap.alerts (kind, transaction_id, job_id, user_id, order_id, product_id, reason, details,
                                last_notified_at, notified_count)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, now(), 1)
        ON CONFLICT (kind, transaction_id) WHERE state = 'open' AND transaction_id IS NOT NULL DO NOTHING
        RETURNING id
        """
    static let insertPerJobSQL = """
        INSERT INTO iap.alerts (kind, transaction_id, job_id, user_id, order_id, product_id, reason, details,
                                last_notified_at, notified_count)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, now(), 1)
        ON CONFLICT (kind, job_id) WHERE state = 'open' AND transaction_id IS NULL DO NOTHING
        RETURNING id
        """

    /// Writes the alert; returns its id, or nil when the same alert was already open.
    /// The caller announces it (`announce`) once its transaction has committed.
    public func raise(_ alert: NewAlert, on connection: PostgresConnection) async throws -> Int? {
        let sql = alert.transactionID == nil ? Self.insertPerJobSQL : Self.insertPerTransactionSQL
        let rows = try await connection.query(sql, [
            alert.kind.rawValue, alert.transactionID, alert.jobID.map(Int64.init), alert.userID, alert.orderID,
            alert.productID, alert.reason, alert.detailsJSON,
        ])
        return try rows.first?.decode(Int.self, at: 0)
    }

    /// Log line, counter and webhook for a new (committed) or re-emitted alert.
    public func announce(_ alert: NewAlert, id: Int, repeated: Bool) {
        var fields = alert.logFields(id: id)
        if repeated { fields.append(("repeat", .bool(true))) }
        logger.log(.error, alert.kind.rawValue, fields: fields)
        if !repeated { metrics.alertsRaised.labels(alert.kind.rawValue).inc() }
        webhook?.send(alert, id: id, repeated: repeated)
    }
}

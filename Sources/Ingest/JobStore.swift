import Postgres

/// What `GET /v1/jobs/{id}` reports: the client's delayed poll.
public struct JobStatus: Sendable, Equatable {
    public var jobID: Int64
    public var state: String
    public var outcome: String?
    public var orderID: String?
    public var transactionIDs: [String]

    public init(jobID: Int64, state: String, outcome: String?, orderID: String?, transactionIDs: [String]) {
        self.jobID = jobID
        self.state = state
        self.outcome = outcome
        self.orderID = orderID
        self.transactionIDs = transactionIDs
    }

    /// `{"job_id","state","outcome","order_id","transaction_ids":[...]}` (SPEC 4).
    public var json: [UInt8] {
        JSONText.object([
            "job_id": .int(jobID), "state": .string(state), "outcome": .string(outcome),
            "order_id": .string(orderID), "transaction_ids": .strings(transactionIDs),
        ])
    }
}

/// The kinds of job the ingest API creates, as stored in `iap.jobs.kind`.
public enum IngestJobKind: String, Sendable, CaseIterable {
    case receipt
    case signedTransaction = "signed_transaction"
    case notification
}

public struct EnqueueResult: Sendable, Equatable {
    public var jobID: Int64
    /// False when the same submission already had a job (its id is returned).
    public var created: Bool
}

/// The ingest API's SQL, each statement in one place. Enqueue goes through the `iap.enqueue_*`
/// functions (the same path as the web tier), in autocommit: when the call returns, the job is
/// committed, so the 202 is never sent for a job that could still roll back.
public struct JobStore: Sendable {
    // The function runs in an OFFSET 0 subquery, so the outer column is evaluated after it: a
    // transaction id is assigned only when the function inserted a row, which tells a new job from
    // an existing one without a second round trip.
    static let enqueueReceiptSQL = """
        SELECT job_id, pg_current_xact_id_if_assigned() IS NOT NULL AS created
        FROM (SELECT iap.enqueue_receipt($1, $2, $3, $4) AS job_id OFFSET 0) AS enqueued
        """
    static let enqueueTransactionSQL = """
        SELECT job_id, pg_current_xact_id_if_assigned() IS NOT NULL AS created
        FROM (SELECT iap.enqueue_transaction($1, $2, $3) AS job_id OFFSET 0) AS enqueued
        """
    static let enqueueNotificationSQL = """
        SELECT job_id, pg_current_xact_id_if_assigned() IS NOT NULL AS created
        FROM (SELECT iap.enqueue_notification($1) AS job_id OFFSET 0) AS enqueued
        """
    static let jobStatusSQL = """
        SELECT id, state, outcome, order_id, transaction_ids FROM iap.jobs WHERE id = $1
        """

    public let client: PostgresClient

    public init(client: PostgresClient) { self.client = client }

    public func enqueue(_ receipt: ReceiptSubmission) async throws -> EnqueueResult {
        try await enqueue(Self.enqueueReceiptSQL, [receipt.userID, receipt.orderID, receipt.receiptData, receipt.productID])
    }

    public func enqueue(_ transaction: TransactionSubmission) async throws -> EnqueueResult {
        try await enqueue(Self.enqueueTransactionSQL, [transaction.userID, transaction.orderID, transaction.signedTransaction])
    }

    public func enqueue(_ notification: NotificationSubmission) async throws -> EnqueueResult {
        try await enqueue(Self.enqueueNotificationSQL, [notification.signedPayload])
    }

    /// nil when there is no such job.
    public func status(jobID: Int64) async throws -> JobStatus? {
        guard let row = try await client.query(Self.jobStatusSQL, [jobID]).first else { return nil }
        return JobStatus(jobID: try row.decode(Int64.self, "id"), state: try row.decode(String.self, "state"),
                         outcome: try row.decode(String?.self, "outcome"), orderID: try row.decode(String?.self, "order_id"),
                         transactionIDs: try row.decode([String].self, "transaction_ids"))
    }

    // Safe to repeat (PostgresClient retries once on a lost connection): enqueue is idempotent.
    private func enqueue(_ sql: String, _ binds: [any PostgresEncodable]) async throws -> EnqueueResult {
        guard let row = try await client.query(sql, binds).first else {
            throw PostgresError(kind: .client, message: "enqueue returned no row")
        }
        return EnqueueResult(jobID: try row.decode(Int64.self, "job_id"), created: try row.decode(Bool.self, "created"))
    }
}

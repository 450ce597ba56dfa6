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

    /// `{"job_id","state","outcome","order_id","transaction_ids":[...]}`.
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

/// The ingest API's database side. Enqueue goes through `iap.enqueue_jobs` (the function
/// behind the web tier's `iap.enqueue_*`), grouped by `EnqueueBatcher`: when a call returns,
/// its job is committed, so the 202 is never sent for a job that could still roll back.
public struct JobStore: Sendable {
    static let jobStatusSQL = """
        SELECT id, state, outcome, order_id, transaction_ids FROM iap.jobs WHERE id = $1
        """

    public let client: PostgresClient
    private let batcher: EnqueueBatcher

    public init(client: PostgresClient) {
        self.client = client
        batcher = EnqueueBatcher(client: client)
    }

    public func enqueue(_ receipt: ReceiptSubmission) async throws -> EnqueueResult {
        try await batcher.enqueue(JobInsert(kind: .receipt, userID: receipt.userID, orderID: Self.absentIfEmpty(receipt.orderID),
                                            productID: Self.absentIfEmpty(receipt.productID), payload: receipt.receiptData))
    }

    public func enqueue(_ transaction: TransactionSubmission) async throws -> EnqueueResult {
        try await batcher.enqueue(JobInsert(kind: .signedTransaction, userID: transaction.userID,
                                            orderID: Self.absentIfEmpty(transaction.orderID), productID: nil,
                                            payload: transaction.signedTransaction))
    }

    public func enqueue(_ notification: NotificationSubmission) async throws -> EnqueueResult {
        try await batcher.enqueue(JobInsert(kind: .notification, userID: nil, orderID: nil, productID: nil,
                                            payload: notification.signedPayload))
    }

    /// nil when there is no such job.
    public func status(jobID: Int64) async throws -> JobStatus? {
        guard let row = try await client.query(Self.jobStatusSQL, [jobID]).first else { return nil }
        return JobStatus(jobID: try row.decode(Int64.self, "id"), state: try row.decode(String.self, "state"),
                         outcome: try row.decode(String?.self, "outcome"), orderID: try row.decode(String?.self, "order_id"),
                         transactionIDs: try row.decode([String].self, "transaction_ids"))
    }

    /// As `iap.enqueue_receipt` does (`nullif`): an empty id is no id, so both dedupe alike.
    private static func absentIfEmpty(_ text: String?) -> String? {
        text.flatMap { $0.isEmpty ? nil : $0 }
    }
}

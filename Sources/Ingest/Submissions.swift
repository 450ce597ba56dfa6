/// The validated bodies of the ingest API. Each parser is pure: bytes in, a value or an
/// `IngestValidationError` (the exact 400 message) out. HTTP and the NDJSON bulk loader share them.

/// `POST /v1/receipts` and one NDJSON line of `ingest --file`.
public struct ReceiptSubmission: Sendable, Equatable {
    public var userID: String
    public var orderID: String?
    public var productID: String?
    /// Base64 with line breaks removed.
    public var receiptData: String

    public init(userID: String, orderID: String? = nil, productID: String? = nil, receiptData: String) {
        self.userID = userID
        self.orderID = orderID
        self.productID = productID
        self.receiptData = receiptData
    }

    public init(json bytes: [UInt8]) throws {
        try self.init(json: bytes.withUnsafeBufferPointer { try SubmissionFields(json: $0) })
    }

    init(json bytes: UnsafeBufferPointer<UInt8>) throws {
        try self.init(json: SubmissionFields(json: bytes))
    }

    private init(json fields: SubmissionFields) throws {
        userID = try fields.requiredIdentifier("user_id")
        orderID = try fields.optionalIdentifier("order_id")
        productID = try fields.optionalIdentifier("product_id")
        receiptData = try ReceiptData.normalize(try fields.requiredString("receipt_data"))
    }
}

/// `POST /v1/transactions`: a StoreKit 2 JWS, judged later by the worker.
public struct TransactionSubmission: Sendable, Equatable {
    public var userID: String
    public var orderID: String?
    public var signedTransaction: String

    public init(userID: String, orderID: String? = nil, signedTransaction: String) {
        self.userID = userID
        self.orderID = orderID
        self.signedTransaction = signedTransaction
    }

    public init(json bytes: [UInt8]) throws {
        let fields = try bytes.withUnsafeBufferPointer { try SubmissionFields(json: $0) }
        userID = try fields.requiredIdentifier("user_id")
        orderID = try fields.optionalIdentifier("order_id")
        signedTransaction = try fields.requiredString("signed_transaction")
    }
}

/// `POST /v1/notifications`: any object whose `signedPayload` is a non-empty string (Apple may add
/// fields; they are ignored). The JWS is the proof, verified by the worker.
public struct NotificationSubmission: Sendable, Equatable {
    public var signedPayload: String

    public init(signedPayload: String) { self.signedPayload = signedPayload }

    public init(json bytes: [UInt8]) throws {
        let fields = try bytes.withUnsafeBufferPointer { try SubmissionFields(json: $0) }
        signedPayload = try fields.requiredString("signedPayload")
    }
}

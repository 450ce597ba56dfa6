import Foundation

/// The verifyReceipt request body. `password` is the app's shared secret: it travels in the
/// body only, so it is never part of a URL, header or log line.
public struct VerifyReceiptRequestBody: Codable, Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    public var receiptData: String
    public var password: String?
    public var excludeOldTransactions: Bool

    enum CodingKeys: String, CodingKey {
        case receiptData = "receipt-data"
        case password
        case excludeOldTransactions = "exclude-old-transactions"
    }

    public init(receiptData: String, password: String? = nil, excludeOldTransactions: Bool = false) {
        self.receiptData = receiptData
        self.password = password
        self.excludeOldTransactions = excludeOldTransactions
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        receiptData = try c.decode(String.self, forKey: .receiptData)
        password = c.lenientString(.password)
        excludeOldTransactions = c.lenientBool(.excludeOldTransactions) ?? false
    }

    /// Hides the secret and the receipt from `print`, interpolation and debuggers' summaries.
    public var description: String {
        "VerifyReceiptRequestBody(receipt-data: <\(receiptData.utf8.count) bytes>, password: <\(password == nil ? "none" : "redacted")>)"
    }
    public var debugDescription: String { description }
}

/// One `in_app` / `latest_receipt_info` entry exactly as Apple spells it: every value is kept as
/// the string Apple sent (numbers are accepted and turned into strings).
public struct VerifyReceiptInApp: Codable, Sendable, Equatable {
    public var quantity: String?
    public var productID: String?
    public var transactionID: String?
    public var originalTransactionID: String?
    public var purchaseDate: String?
    public var purchaseDateMs: String?
    public var cancellationDate: String?
    public var cancellationDateMs: String?
    public var cancellationReason: String?
    public var appAccountToken: String?

    enum CodingKeys: String, CodingKey {
        case quantity
        case productID = "product_id"
        case transactionID = "transaction_id"
        case originalTransactionID = "original_transaction_id"
        case purchaseDate = "purchase_date"
        case purchaseDateMs = "purchase_date_ms"
        case cancellationDate = "cancellation_date"
        case cancellationDateMs = "cancellation_date_ms"
        case cancellationReason = "cancellation_reason"
        case appAccountToken = "app_account_token"
    }

    public init(quantity: String? = nil, productID: String? = nil, transactionID: String? = nil,
                originalTransactionID: String? = nil, purchaseDate: String? = nil, purchaseDateMs: String? = nil,
                cancellationDate: String? = nil, cancellationDateMs: String? = nil,
                cancellationReason: String? = nil, appAccountToken: String? = nil) {
        self.quantity = quantity
        self.productID = productID
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.purchaseDate = purchaseDate
        self.purchaseDateMs = purchaseDateMs
        self.cancellationDate = cancellationDate
        self.cancellationDateMs = cancellationDateMs
        self.cancellationReason = cancellationReason
        self.appAccountToken = appAccountToken
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        quantity = c.lenientString(.quantity)
        productID = c.lenientString(.productID)
        transactionID = c.lenientString(.transactionID)
        originalTransactionID = c.lenientString(.originalTransactionID)
        purchaseDate = c.lenientString(.purchaseDate)
        purchaseDateMs = c.lenientString(.purchaseDateMs)
        cancellationDate = c.lenientString(.cancellationDate)
        cancellationDateMs = c.lenientString(.cancellationDateMs)
        cancellationReason = c.lenientString(.cancellationReason)
        appAccountToken = c.lenientString(.appAccountToken)
    }
}

public struct VerifyReceiptReceipt: Codable, Sendable, Equatable {
    public var bundleID: String?
    public var inApp: [VerifyReceiptInApp]

    enum CodingKeys: String, CodingKey {
        case bundleID = "bundle_id"
        case inApp = "in_app"
    }

    public init(bundleID: String?, inApp: [VerifyReceiptInApp]) {
        self.bundleID = bundleID
        self.inApp = inApp
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        bundleID = c.lenientString(.bundleID)
        inApp = try c.decodeIfPresent([VerifyReceiptInApp].self, forKey: .inApp) ?? []
    }
}

/// The verifyReceipt response. Only `status` is required; everything else is read tolerantly.
public struct VerifyReceiptResponseBody: Codable, Sendable, Equatable {
    public var status: Int
    public var environment: String?
    /// Either `is_retryable` or `is-retryable` on the wire (Apple has used both).
    public var isRetryable: Bool?
    public var receipt: VerifyReceiptReceipt?
    public var latestReceiptInfo: [VerifyReceiptInApp]?

    enum CodingKeys: String, CodingKey {
        case status, environment, receipt
        case isRetryable = "is_retryable"
        case isRetryableHyphen = "is-retryable"
        case latestReceiptInfo = "latest_receipt_info"
    }

    public init(status: Int, environment: String? = nil, isRetryable: Bool? = nil,
                receipt: VerifyReceiptReceipt? = nil, latestReceiptInfo: [VerifyReceiptInApp]? = nil) {
        self.status = status
        self.environment = environment
        self.isRetryable = isRetryable
        self.receipt = receipt
        self.latestReceiptInfo = latestReceiptInfo
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        guard let status = c.lenientInt(.status) else {
            throw DecodingError.dataCorruptedError(forKey: .status, in: c, debugDescription: "missing or non-numeric status")
        }
        self.status = status
        environment = c.lenientString(.environment)
        isRetryable = c.lenientBool(.isRetryable) ?? c.lenientBool(.isRetryableHyphen)
        // A malformed receipt object under a non-zero status must not hide the status.
        receipt = try? c.decodeIfPresent(VerifyReceiptReceipt.self, forKey: .receipt)
        latestReceiptInfo = try? c.decodeIfPresent([VerifyReceiptInApp].self, forKey: .latestReceiptInfo)
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(status, forKey: .status)
        try c.encodeIfPresent(environment, forKey: .environment)
        try c.encodeIfPresent(isRetryable, forKey: .isRetryable)
        try c.encodeIfPresent(receipt, forKey: .receipt)
        try c.encodeIfPresent(latestReceiptInfo, forKey: .latestReceiptInfo)
    }
}

import AppStore
import Foundation
import JSONWire

/// A receipt the simulator understands: base64 of this JSON. Real Apple receipts (PKCS#7) are not
/// understood and get 21002, like any other garbage.
public struct SimReceipt: Codable, Sendable, Equatable {
    public struct Transaction: Codable, Sendable, Equatable {
        public var transactionID: String
        public var originalTransactionID: String?
        public var productID: String
        public var quantity: Int?
        public var purchaseDateMs: Int64?
        /// Set for a refunded purchase: Apple then lists `cancellation_date*` on the entry.
        public var cancellationDateMs: Int64?
        public var cancellationReason: String?
        public var appAccountToken: String?

        enum CodingKeys: String, CodingKey {
            case transactionID = "transaction_id"
            case originalTransactionID = "original_transaction_id"
            case productID = "product_id"
            case quantity
            case purchaseDateMs = "purchase_date_ms"
            case cancellationDateMs = "cancellation_date_ms"
            case cancellationReason = "cancellation_reason"
            case appAccountToken = "app_account_token"
        }

        /// `purchaseDateMs` defaults to now, so a minted receipt answers the same date every time.
        public init(transactionID: String, originalTransactionID: String? = nil, productID: String,
                    quantity: Int? = nil, purchaseDateMs: Int64? = SimReceipt.nowMilliseconds(),
                    cancellationDateMs: Int64? = nil, cancellationReason: String? = nil, appAccountToken: String? = nil) {
            self.transactionID = transactionID
            self.originalTransactionID = originalTransactionID
            self.productID = productID
            self.quantity = quantity
            self.purchaseDateMs = purchaseDateMs
            self.cancellationDateMs = cancellationDateMs
            self.cancellationReason = cancellationReason
            self.appAccountToken = appAccountToken
        }
    }

    public var sim: Int
    public var bundleID: String
    public var environment: AppleEnvironment
    public var transactions: [Transaction]
    /// Makes the simulator answer exactly this status (tests of 21003, 21004, 21010, ...).
    public var forceStatus: Int?

    enum CodingKeys: String, CodingKey {
        case sim
        case bundleID = "bundle_id"
        case environment, transactions
        case forceStatus = "force_status"
    }

    public init(bundleID: String, environment: AppleEnvironment = .production, transactions: [Transaction],
                forceStatus: Int? = nil) {
        self.sim = 1
        self.bundleID = bundleID
        self.environment = environment
        self.transactions = transactions
        self.forceStatus = forceStatus
    }

    /// The base64 receipt string an app would upload.
    public func mint() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return ((try? encoder.encode(self)) ?? Data()).base64EncodedString()
    }

    /// nil for anything that is not base64 of a `"sim":1` receipt.
    public static func parse(base64: String) -> SimReceipt? {
        let text = base64.trimmingWhitespace
        guard !text.isEmpty, let data = Data(base64Encoded: text), let json = try? JSONValue.parse(data),
              let receipt = try? SimReceipt(json: json), receipt.sim == 1 else { return nil }
        return receipt
    }

    public static func nowMilliseconds() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }
}

import Foundation

/// One purchase as Apple reported it. Quantity and product come from Apple, never the client.
public struct AppleTransaction: Sendable, Equatable {
    public var transactionID: String
    public var originalTransactionID: String
    public var productID: String
    public var quantity: Int
    public var purchaseDate: Date?
    public var appAccountToken: UUID?
    /// Set when Apple lists a cancellation (refund): such a transaction is never credited.
    public var revocationDate: Date?
    /// Apple's reason code as text ("0", "1").
    public var revocationReason: String?
    public var environment: AppleEnvironment
    /// Stored, not derived from `revocationDate`: a cancellation whose date cannot be parsed
    /// must still count as revoked.
    public var isRevoked: Bool

    public init(transactionID: String, originalTransactionID: String, productID: String, quantity: Int,
                purchaseDate: Date? = nil, appAccountToken: UUID? = nil, revocationDate: Date? = nil,
                revocationReason: String? = nil, environment: AppleEnvironment, isRevoked: Bool? = nil) {
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.quantity = quantity
        self.purchaseDate = purchaseDate
        self.appAccountToken = appAccountToken
        self.revocationDate = revocationDate
        self.revocationReason = revocationReason
        self.environment = environment
        self.isRevoked = isRevoked ?? (revocationDate != nil)
    }
}

/// A receipt Apple accepted (status 0) whose bundle id matched the configuration.
public struct VerifiedReceipt: Sendable, Equatable {
    public var bundleID: String
    public var environment: AppleEnvironment
    public var transactions: [AppleTransaction]

    public init(bundleID: String, environment: AppleEnvironment, transactions: [AppleTransaction]) {
        self.bundleID = bundleID
        self.environment = environment
        self.transactions = transactions
    }
}

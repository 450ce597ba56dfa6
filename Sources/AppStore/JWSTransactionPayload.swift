import Foundation

/// The decoded payload of a signed transaction (`JWSTransactionDecodedPayload`), Apple's names.
/// Decoding is lenient (numbers or numeric strings, unknown fields ignored); what the worker
/// needs is checked by `appleTransaction()`.
public struct JWSTransactionPayload: Codable, Sendable, Equatable {
    public var transactionId: String?
    public var originalTransactionId: String?
    public var bundleId: String?
    public var productId: String?
    public var quantity: Int?
    public var purchaseDate: Date?
    public var originalPurchaseDate: Date?
    public var signedDate: Date?
    public var expiresDate: Date?
    public var revocationDate: Date?
    /// Apple's reason code as text ("0", "1").
    public var revocationReason: String?
    public var appAccountToken: String?
    public var environment: String?
    /// "Consumable", "Non-Consumable", "Auto-Renewable Subscription", "Non-Renewing Subscription".
    public var type: String?
    public var inAppOwnershipType: String?
    public var transactionReason: String?
    public var storefront: String?

    enum CodingKeys: String, CodingKey {
        case transactionId, originalTransactionId, bundleId, productId, quantity, purchaseDate,
             originalPurchaseDate, signedDate, expiresDate, revocationDate, revocationReason,
             appAccountToken, environment, type, inAppOwnershipType, transactionReason, storefront
    }

    public init(transactionId: String?, originalTransactionId: String? = nil, bundleId: String?, productId: String?,
                quantity: Int? = 1, purchaseDate: Date? = nil, originalPurchaseDate: Date? = nil, signedDate: Date? = nil,
                expiresDate: Date? = nil, revocationDate: Date? = nil, revocationReason: String? = nil,
                appAccountToken: String? = nil, environment: String?, type: String? = "Consumable",
                inAppOwnershipType: String? = "PURCHASED", transactionReason: String? = "PURCHASE", storefront: String? = nil) {
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.bundleId = bundleId
        self.productId = productId
        self.quantity = quantity
        self.purchaseDate = purchaseDate
        self.originalPurchaseDate = originalPurchaseDate
        self.signedDate = signedDate
        self.expiresDate = expiresDate
        self.revocationDate = revocationDate
        self.revocationReason = revocationReason
        self.appAccountToken = appAccountToken
        self.environment = environment
        self.type = type
        self.inAppOwnershipType = inAppOwnershipType
        self.transactionReason = transactionReason
        self.storefront = storefront
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        transactionId = c.lenientString(.transactionId)
        originalTransactionId = c.lenientString(.originalTransactionId)
        bundleId = c.lenientString(.bundleId)
        productId = c.lenientString(.productId)
        quantity = c.lenientInt(.quantity)
        purchaseDate = c.millisecondsDate(.purchaseDate)
        originalPurchaseDate = c.millisecondsDate(.originalPurchaseDate)
        signedDate = c.millisecondsDate(.signedDate)
        expiresDate = c.millisecondsDate(.expiresDate)
        revocationDate = c.millisecondsDate(.revocationDate)
        revocationReason = c.lenientString(.revocationReason)
        appAccountToken = c.lenientString(.appAccountToken)
        environment = c.lenientString(.environment)
        type = c.lenientString(.type)
        inAppOwnershipType = c.lenientString(.inAppOwnershipType)
        transactionReason = c.lenientString(.transactionReason)
        storefront = c.lenientString(.storefront)
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(transactionId, forKey: .transactionId)
        try c.encodeIfPresent(originalTransactionId, forKey: .originalTransactionId)
        try c.encodeIfPresent(bundleId, forKey: .bundleId)
        try c.encodeIfPresent(productId, forKey: .productId)
        try c.encodeIfPresent(quantity, forKey: .quantity)
        try c.encodeMilliseconds(purchaseDate, forKey: .purchaseDate)
        try c.encodeMilliseconds(originalPurchaseDate, forKey: .originalPurchaseDate)
        try c.encodeMilliseconds(signedDate, forKey: .signedDate)
        try c.encodeMilliseconds(expiresDate, forKey: .expiresDate)
        try c.encodeMilliseconds(revocationDate, forKey: .revocationDate)
        try c.encodeIfPresent(revocationReason.flatMap { Int($0) }, forKey: .revocationReason)  // a number on the wire
        try c.encodeIfPresent(appAccountToken, forKey: .appAccountToken)
        try c.encodeIfPresent(environment, forKey: .environment)
        try c.encodeIfPresent(type, forKey: .type)
        try c.encodeIfPresent(inAppOwnershipType, forKey: .inAppOwnershipType)
        try c.encodeIfPresent(transactionReason, forKey: .transactionReason)
        try c.encodeIfPresent(storefront, forKey: .storefront)
    }

    /// The domain transaction, or nil when an id, the product or the quantity is unusable
    /// (such a payload must not be credited, nor silently dropped: the caller reports it).
    public func appleTransaction() -> AppleTransaction? {
        guard let id = transactionId?.trimmingCharacters(in: .whitespaces), !id.isEmpty,
              let product = productId?.trimmingCharacters(in: .whitespaces), !product.isEmpty else { return nil }
        let count = quantity ?? 1
        guard count > 0 else { return nil }
        let environment = environment.flatMap(StoreKitEnvironment.init(rawValue:))?.appleEnvironment ?? .sandbox
        let original = originalTransactionId?.trimmingCharacters(in: .whitespaces)
        return AppleTransaction(
            transactionID: id,
            originalTransactionID: original?.isEmpty == false ? original! : id,
            productID: product,
            quantity: count,
            purchaseDate: purchaseDate,
            appAccountToken: appAccountToken.flatMap(UUID.init(uuidString:)),
            revocationDate: revocationDate,
            revocationReason: revocationReason,
            environment: environment,
            isRevoked: revocationDate != nil || revocationReason != nil)
    }
}

import Foundation

/// Turns Apple's `in_app` entries into domain transactions.
enum ReceiptTransactions {
    /// An entry the worker cannot act on safely (no transaction or product id, nonsense quantity).
    /// The whole response is then treated as malformed and retried: skipping the entry could
    /// silently drop a paid purchase.
    struct MalformedEntry: Error {}

    static func make(_ entries: [VerifyReceiptInApp], environment: AppleEnvironment) throws(MalformedEntry) -> [AppleTransaction] {
        var seen = Set<String>()
        var result: [AppleTransaction] = []
        for entry in entries {
            let transaction = try make(entry, environment: environment)
            if seen.insert(transaction.transactionID).inserted { result.append(transaction) }
        }
        return result
    }

    static func make(_ entry: VerifyReceiptInApp, environment: AppleEnvironment) throws(MalformedEntry) -> AppleTransaction {
        guard let id = nonEmpty(entry.transactionID), let product = nonEmpty(entry.productID) else { throw MalformedEntry() }
        let quantity: Int
        if let text = nonEmpty(entry.quantity) {
            guard let q = Int(text), q > 0 else { throw MalformedEntry() }
            quantity = q
        } else {
            quantity = 1  // Apple always sends it; a missing quantity means one unit
        }
        let cancelled = nonEmpty(entry.cancellationDateMs) != nil || nonEmpty(entry.cancellationDate) != nil
        let revocationDate = cancelled
            ? AppleDates.fromMilliseconds(entry.cancellationDateMs) ?? AppleDates.fromAppleString(entry.cancellationDate)
            : nil
        return AppleTransaction(
            transactionID: id,
            originalTransactionID: nonEmpty(entry.originalTransactionID) ?? id,
            productID: product,
            quantity: quantity,
            purchaseDate: AppleDates.fromMilliseconds(entry.purchaseDateMs) ?? AppleDates.fromAppleString(entry.purchaseDate),
            appAccountToken: nonEmpty(entry.appAccountToken).flatMap(UUID.init(uuidString:)),
            revocationDate: revocationDate,
            revocationReason: cancelled ? nonEmpty(entry.cancellationReason) : nil,
            environment: environment,
            isRevoked: cancelled)
    }

    private static func nonEmpty(_ s: String?) -> String? {
        guard let t = s?.trimmingWhitespace, !t.isEmpty else { return nil }
        return t
    }
}

import AppStore
import Foundation
import StoreKitCrypto

/// Bulk setups for benchmarks and demos: many transactions Apple knows, many notifications it
/// failed to deliver.
extension SimServerAPI {
    /// `count` consumable purchases (`prefix-1` … `prefix-N`) known to Get Transaction Info (production).
    public func registerTransactions(prefix: String, count: Int, productID: String, bundleID: String) {
        guard count > 0 else { return }
        for n in 1...count {
            register(JWSTransactionPayload(transactionId: "\(prefix)-\(n)", originalTransactionId: "\(prefix)-\(n)", bundleId: bundleID,
                                           productId: productID, purchaseDate: Date(), environment: "Production"))
        }
    }

    /// `count` TEST notifications that never reached the developer's server, a second apart ending now.
    public func recordFailedNotifications(count: Int, bundleID: String, appAppleID: Int64?) throws(CryptoError) {
        let end = Date()
        for n in 0..<count {
            let sentAt = end.addingTimeInterval(-Double(count - n))
            let signed = try signingChain.signNotification(type: "TEST", transaction: nil, bundleID: bundleID, appAppleID: appAppleID,
                                                           environment: .production, signedDate: sentAt)
            recordNotification(signed, sentAt: sentAt, delivered: false)
        }
    }
}

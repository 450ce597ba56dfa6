import AppStore
import Foundation
import StoreKitCrypto

/// Minting signed transactions and notifications (simulator endpoints, tests, the demo).
extension SimSigningChain {
    public func signTransaction(_ payload: JWSTransactionPayload) throws(CryptoError) -> String {
        try sign(payload: Self.json(payload))
    }

    /// A notification whose `data.signedTransactionInfo` is `transaction` signed by this chain.
    /// `uuid` defaults to a fresh one; pass the same uuid to model Apple re-sending a notification.
    public func signNotification(type: String, subtype: String? = nil, uuid: String = UUID().uuidString,
                                 transaction: JWSTransactionPayload?, bundleID: String, appAppleID: Int64?,
                                 environment: StoreKitEnvironment, signedDate: Date = Date()) throws(CryptoError) -> String {
        let inner = try transaction.map { payload throws(CryptoError) in try signTransaction(payload) }
        let payload = NotificationPayload(
            notificationType: type, subtype: subtype, notificationUUID: uuid, signedDate: signedDate,
            data: NotificationData(appAppleId: appAppleID, bundleId: bundleID, environment: environment.rawValue,
                                   signedTransactionInfo: inner))
        return try signNotification(payload)
    }

    public func signNotification(_ payload: NotificationPayload) throws(CryptoError) -> String {
        try sign(payload: Self.json(payload))
    }

    static func json<T: Encodable>(_ value: T) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(value)).map { [UInt8]($0) } ?? []  // these payloads always encode
    }
}

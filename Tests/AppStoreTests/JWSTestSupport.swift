import AppStore
import AppleSim
import Foundation
import StoreKitCrypto

/// Fixed dates and chains for the StoreKit 2 tests: every verification is judged at the
/// payload's `signedDate`, so nothing here depends on the wall clock.
enum JWSFixtures {
    static let bundleID = "com.example.game"
    static let appAppleID: Int64 = 1_234_567_890
    /// 2025-11-21T04:40:00Z
    static let signedDate = Date(timeIntervalSince1970: 1_763_700_000)
    static let chainValidity = Date(timeIntervalSince1970: 1_735_689_600)...Date(timeIntervalSince1970: 1_893_456_000) // 2025…2030

    static let chain = try! SimSigningChain(options: .init(validity: chainValidity))
    static let otherChain = try! SimSigningChain(options: .init(validity: chainValidity, commonNamePrefix: "Stranger"))

    static func verifier(allowSandbox: Bool = false, environments: Set<StoreKitEnvironment>? = nil,
                         cacheCapacity: Int = 32, roots: [X509Certificate] = [chain.root]) -> StoreKitSignedDataVerifier {
        let configuration = environments.map {
            StoreKitVerifierConfiguration(bundleID: bundleID, appAppleID: appAppleID, acceptedEnvironments: $0,
                                          chainCacheCapacity: cacheCapacity)
        } ?? StoreKitVerifierConfiguration(bundleID: bundleID, appAppleID: appAppleID, allowSandbox: allowSandbox,
                                           chainCacheCapacity: cacheCapacity)
        return try! StoreKitSignedDataVerifier(configuration: configuration, trustedRoots: roots)
    }

    static func transaction(_ id: String = "2000000123456789", bundle: String = bundleID,
                            environment: String = "Production", signedDate: Date? = signedDate) -> JWSTransactionPayload {
        JWSTransactionPayload(
            transactionId: id, originalTransactionId: id, bundleId: bundle, productId: "coins_100", quantity: 2,
            purchaseDate: Date(timeIntervalSince1970: 1_763_699_990), signedDate: signedDate,
            appAccountToken: "6F1C2B4E-8A4D-4C1B-9B0A-2C7D5E3F1A90", environment: environment)
    }

    static func json(_ object: [String: Any]) -> [UInt8] {
        [UInt8](try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
    }

    /// A token with an arbitrary header, signed (validly for ES256) by `chain`'s leaf key.
    static func token(header: [String: Any], payload: [UInt8], chain: SimSigningChain = chain) -> String {
        let headerJSON = json(header)
        let signingInput = JWSBase64URL.encode(headerJSON) + "." + JWSBase64URL.encode(payload)
        let signature = try! chain.leafKey.signature(for: Array(signingInput.utf8))
        return signingInput + "." + JWSBase64URL.encode(signature)
    }
}

extension StoreKitSignedDataVerifier {
    /// The reason word a verification fails with, or "ok".
    func transactionOutcome(_ jws: String) -> String {
        do {
            _ = try verifyTransaction(jws)
            return "ok"
        } catch {
            return error.reason.rawValue
        }
    }
}

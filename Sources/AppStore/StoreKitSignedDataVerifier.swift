import Foundation
import StoreKitCrypto

/// A signed transaction that passed every check.
public struct VerifiedTransaction: Sendable, Equatable {
    public var payload: JWSTransactionPayload
    public var transaction: AppleTransaction
    public var environment: StoreKitEnvironment
}

/// A notification that passed every check, with its inner transaction (when it carries one)
/// verified the same way.
public struct VerifiedNotification: Sendable, Equatable {
    public var payload: NotificationPayload
    public var transaction: VerifiedTransaction?
}

/// Verifies StoreKit 2 JWS locally, in the order of Apple's App Store Server Library:
/// alg → x5c → chain at `signedDate` → Apple's marker OIDs → signature → payload → bundle id →
/// environment → (production notifications) app id. Synchronous and CPU-only (no I/O, a
/// verified chain cached), fine on the cooperative pool.
public final class StoreKitSignedDataVerifier: Sendable {
    public static let leafMarkerOID = "1.2.840.113635.100.6.11.1"
    public static let intermediateMarkerOID = "1.2.840.113635.100.6.2.1"

    public let configuration: StoreKitVerifierConfiguration
    private let trustStore: X509TrustStore
    private let cache: StoreKitChainCache

    /// - Parameter trustedRoots: the bundled Apple Root CA - G3 when nil (see `StoreKitTrustedRoots`).
    public init(configuration: StoreKitVerifierConfiguration, trustedRoots: [X509Certificate]? = nil) throws(CryptoError) {
        self.configuration = configuration
        var roots = trustedRoots ?? []
        if trustedRoots == nil { roots = try StoreKitTrustedRoots.appleDefault() }
        trustStore = try X509TrustStore(roots: roots)
        cache = StoreKitChainCache(capacity: configuration.chainCacheCapacity, lifetime: configuration.chainCacheLifetime)
    }

    /// Chains currently cached (for tests and diagnostics).
    public var cachedChainCount: Int { cache.count }

    /// - Parameter now: the verification time when the payload has no `signedDate`.
    public func verifyTransaction(_ jws: String, now: Date = Date()) throws(StoreKitVerificationError) -> VerifiedTransaction {
        let payloadBytes = try verifiedPayload(jws, now: now)
        guard let payload = try? JSONDecoder().decode(JWSTransactionPayload.self, from: Data(payloadBytes)) else {
            throw .init(.payloadInvalid, "transaction payload is not a JSON object")
        }
        guard let transaction = payload.appleTransaction() else {
            throw .init(.payloadInvalid, "transaction payload lacks a transactionId or productId, or has a bad quantity")
        }
        try checkBundle(payload.bundleId)
        let environment = try checkEnvironment(payload.environment)
        return VerifiedTransaction(payload: payload, transaction: transaction, environment: environment)
    }

    public func verifyNotification(_ signedPayload: String, now: Date = Date()) throws(StoreKitVerificationError) -> VerifiedNotification {
        let payloadBytes = try verifiedPayload(signedPayload, now: now)
        guard let payload = try? JSONDecoder().decode(NotificationPayload.self, from: Data(payloadBytes)) else {
            throw .init(.payloadInvalid, "notification payload is not a JSON object")
        }
        guard payload.notificationType?.isEmpty == false, payload.notificationUUID?.isEmpty == false,
              let identity = payload.appIdentity else {
            throw .init(.payloadInvalid, "notification lacks notificationType, notificationUUID or data")
        }
        try checkBundle(identity.bundleId)
        let environment = try checkEnvironment(identity.environment)
        if environment == .production {
            guard let expected = configuration.appAppleID else {
                throw .init(.appIDMismatch, "production notification but no app id is configured (APPLE_APP_ID)")
            }
            guard identity.appAppleId == expected else {
                throw .init(.appIDMismatch, "appAppleId \(identity.appAppleId.map(String.init) ?? "(none)") is not \(expected)")
            }
        }
        var transaction: VerifiedTransaction?
        if let inner = payload.data?.signedTransactionInfo {
            do {
                transaction = try verifyTransaction(inner, now: now)
            } catch {
                throw .init(error.reason, "signedTransactionInfo: \(error.detail)")
            }
        }
        return VerifiedNotification(payload: payload, transaction: transaction)
    }

    // MARK: signature and chain

    /// The payload bytes of a JWS whose header, chain and signature all check out.
    private func verifiedPayload(_ jws: String, now: Date) throws(StoreKitVerificationError) -> [UInt8] {
        let compact: JWSCompact
        do {
            compact = try JWSCompact.parse(jws)
        } catch {
            throw .init(.jwsMalformed, "not a compact JWS (\(error))")
        }
        guard compact.header.alg == "ES256" else {
            throw .init(.badAlg, "header alg \(compact.header.alg.map { "'\($0.prefix(16))'" } ?? "(none)") is not ES256")
        }
        guard let x5c = compact.header.x5c, !x5c.isEmpty else { throw .init(.x5cMissing, "header has no x5c certificates") }
        guard x5c.count == 3 else { throw .init(.x5cLength, "x5c has \(x5c.count) certificates, expected 3") }
        // Validity is judged when Apple signed (read before the signature is checked, as Apple's
        // library does: a forged date cannot help, the signature still has to verify).
        let effectiveDate = Self.unverifiedSignedDate(compact.payload) ?? now
        let leafKey = try chainLeafKey(x5c, at: effectiveDate)
        guard leafKey.isValidSignature(compact.signature, for: compact.signingInput) else {
            throw .init(.signatureInvalid, "signature does not verify with the leaf certificate's key")
        }
        return compact.payload
    }

    private func chainLeafKey(_ x5c: [String], at date: Date) throws(StoreKitVerificationError) -> ES256PublicKey {
        if let cached = cache.leafKey(for: x5c, at: date) { return cached }
        var certificates: [X509Certificate] = []
        for (index, text) in x5c.enumerated() {
            guard let der = Data(base64Encoded: text), let certificate = try? X509Certificate(der: [UInt8](der)) else {
                throw .init(.chainInvalid, "x5c[\(index)] is not a base64 DER certificate")
            }
            certificates.append(certificate)
        }
        let (leaf, intermediate) = (certificates[0], certificates[1])
        let validity: ClosedRange<Date>
        do {
            validity = try trustStore.verify(leaf: leaf, intermediates: [intermediate], at: date, expectedLength: 3)
        } catch {
            throw .init(.chainInvalid, "chain of '\(leaf.subject)' at \(Self.iso(date)): \(error.reason)")
        }
        guard leaf.hasExtension(oid: Self.leafMarkerOID) else {
            throw .init(.leafOIDMissing, "leaf '\(leaf.subject)' lacks \(Self.leafMarkerOID)")
        }
        guard intermediate.hasExtension(oid: Self.intermediateMarkerOID) else {
            throw .init(.intermediateOIDMissing, "intermediate '\(intermediate.subject)' lacks \(Self.intermediateMarkerOID)")
        }
        let key: ES256PublicKey
        do {
            key = try leaf.es256PublicKey()
        } catch {
            throw .init(.chainInvalid, "leaf '\(leaf.subject)' key is not EC P-256")
        }
        cache.store(key, for: x5c, validity: validity)
        return key
    }

    // MARK: claims

    private func checkBundle(_ bundleID: String?) throws(StoreKitVerificationError) {
        guard bundleID == configuration.bundleID else {
            throw .init(.bundleMismatch, "bundleId \(bundleID ?? "(none)") is not \(configuration.bundleID)")
        }
    }

    private func checkEnvironment(_ text: String?) throws(StoreKitVerificationError) -> StoreKitEnvironment {
        guard let environment = text.flatMap(StoreKitEnvironment.init(rawValue:)),
              configuration.acceptedEnvironments.contains(environment) else {
            let accepted = configuration.acceptedEnvironments.map(\.rawValue).sorted().joined(separator: ", ")
            throw .init(.environmentMismatch, "environment \(text.map { String($0.prefix(32)) } ?? "(none)") is not accepted (\(accepted))")
        }
        return environment
    }

    private static func unverifiedSignedDate(_ payload: [UInt8]) -> Date? {
        struct SignedDateOnly: Decodable {
            var signedDate: Date?
            init(from decoder: Decoder) throws {
                signedDate = try decoder.container(keyedBy: CodingKeys.self).millisecondsDate(.signedDate)
            }
            enum CodingKeys: String, CodingKey { case signedDate }
        }
        return (try? JSONDecoder().decode(SignedDateOnly.self, from: Data(payload)))?.signedDate
    }

    private static func iso(_ date: Date) -> String {
        date.formatted(.iso8601)
    }
}

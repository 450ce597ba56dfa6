import AppStore
import Foundation
import StoreKitCrypto

/// A private stand-in for Apple's StoreKit signing PKI: root → intermediate (WWDR marker OID)
/// → leaf (receipt-signing marker OID), generated in memory. The worker trusts it through
/// `APPLE_ROOT_CERTS` pointing at `writeRootPEM(to:)`. Options let tests build broken chains.
public final class SimSigningChain: Sendable {
    public struct Options: Sendable {
        /// Validity of the root and intermediate.
        public var validity: ClosedRange<Date>
        /// Validity of the leaf (defaults to `validity`).
        public var leafValidity: ClosedRange<Date>?
        public var leafHasMarkerOID: Bool
        public var intermediateHasMarkerOID: Bool
        public var commonNamePrefix: String

        /// Valid from a day ago for ten years: fine for anything signed "now".
        public init(validity: ClosedRange<Date> = Date().addingTimeInterval(-86_400)...Date().addingTimeInterval(10 * 365 * 86_400),
                    leafValidity: ClosedRange<Date>? = nil, leafHasMarkerOID: Bool = true,
                    intermediateHasMarkerOID: Bool = true, commonNamePrefix: String = "AppleSim") {
            self.validity = validity
            self.leafValidity = leafValidity
            self.leafHasMarkerOID = leafHasMarkerOID
            self.intermediateHasMarkerOID = intermediateHasMarkerOID
            self.commonNamePrefix = commonNamePrefix
        }
    }

    public let root: X509Certificate
    public let intermediate: X509Certificate
    public let leaf: X509Certificate
    /// The signing key (secret): never logged; exposed so tests can sign deliberately odd tokens.
    public let leafKey: ES256PrivateKey

    public init(options: Options = Options()) throws(CryptoError) {
        let rootKey = try ES256PrivateKey.generate()
        let intermediateKey = try ES256PrivateKey.generate()
        leafKey = try ES256PrivateKey.generate()
        let name = options.commonNamePrefix
        root = try X509CertificateBuilder(
            commonName: "\(name) Root CA", serialNumber: 1, notBefore: options.validity.lowerBound,
            notAfter: options.validity.upperBound, isCertificateAuthority: true
        ).selfSigned(key: rootKey)
        intermediate = try X509CertificateBuilder(
            commonName: "\(name) Worldwide Developer Relations CA", serialNumber: 2,
            notBefore: options.validity.lowerBound, notAfter: options.validity.upperBound, isCertificateAuthority: true,
            markerExtensionOIDs: options.intermediateHasMarkerOID ? [StoreKitSignedDataVerifier.intermediateMarkerOID] : []
        ).issued(for: intermediateKey.publicKey, by: root, issuerKey: rootKey)
        let leafValidity = options.leafValidity ?? options.validity
        leaf = try X509CertificateBuilder(
            commonName: "\(name) StoreKit Signing", serialNumber: 3,
            notBefore: leafValidity.lowerBound, notAfter: leafValidity.upperBound, isCertificateAuthority: false,
            markerExtensionOIDs: options.leafHasMarkerOID ? [StoreKitSignedDataVerifier.leafMarkerOID] : []
        ).issued(for: leafKey.publicKey, by: intermediate, issuerKey: intermediateKey)
    }

    /// The header's x5c: leaf, intermediate, root as base64 DER.
    public var x5c: [String] {
        [leaf, intermediate, root].map { Data($0.derRepresentation).base64EncodedString() }
    }

    public var rootPEM: String { root.pemRepresentation }

    /// Writes the root certificate (public, so plain 0644) for `APPLE_ROOT_CERTS`.
    public func writeRootPEM(to path: String) throws {
        try Data(rootPEM.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    /// An ES256 JWS over `payload` with this chain's x5c, as Apple signs StoreKit data.
    public func sign(payload: [UInt8]) throws(CryptoError) -> String {
        try JWSCompact.sign(header: JWSHeader(alg: "ES256", x5c: x5c), payload: payload, key: leafKey)
    }
}

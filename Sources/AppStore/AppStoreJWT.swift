import Foundation
import StoreKitCrypto

/// The claims of an App Store Server API token.
public struct AppStoreJWTClaims: Codable, Sendable, Equatable {
    public var iss: String
    public var iat: Int64
    public var exp: Int64
    public var aud: String
    public var bid: String

    public init(iss: String, iat: Int64, exp: Int64, aud: String = AppStoreJWT.audience, bid: String) {
        self.iss = iss
        self.iat = iat
        self.exp = exp
        self.aud = aud
        self.bid = bid
    }
}

/// Why a token was refused (simulator side). Never contains the token.
public struct AppStoreJWTError: Error, Sendable, Equatable, CustomStringConvertible {
    public var reason: String
    public var description: String { reason }
}

/// ES256 bearer tokens for the App Store Server API (header `alg ES256`, `kid`, `typ JWT`;
/// claims `iss`, `iat`, `exp`, `aud`, `bid`). Apple refuses tokens that live over 60 minutes.
public enum AppStoreJWT {
    public static let audience = "appstoreconnect-v1"
    public static let maximumLifetime: TimeInterval = 3600

    public static func make(issuerID: String, keyID: String, bundleID: String, key: ES256PrivateKey,
                            issuedAt: Date = Date(), lifetime: TimeInterval = 300) throws(CryptoError) -> String {
        let times = ES256BearerToken.times(issuedAt: issuedAt, lifetime: lifetime, maximumLifetime: maximumLifetime)
        return try ES256BearerToken.sign(AppStoreJWTClaims(iss: issuerID, iat: times.iat, exp: times.exp, bid: bundleID),
                                         keyID: keyID, key: key)
    }

    /// Checks signature and claims; nil expectations are not compared. `leeway` absorbs clock skew.
    public static func verify(_ token: String, publicKey: ES256PublicKey, now: Date = Date(),
                              expectedKeyID: String? = nil, expectedIssuer: String? = nil, expectedBundleID: String? = nil,
                              leeway: TimeInterval = 60) throws(AppStoreJWTError) -> AppStoreJWTClaims {
        let claims: AppStoreJWTClaims = try ES256BearerToken.verifiedClaims(token, publicKey: publicKey, expectedKeyID: expectedKeyID,
                                                                            required: "iss, iat, exp, aud, bid")
        try ES256BearerToken.checkTimes(aud: claims.aud, iat: claims.iat, exp: claims.exp, now: now, leeway: leeway,
                                        maximumLifetime: maximumLifetime)
        if let expectedIssuer, claims.iss != expectedIssuer { throw AppStoreJWTError(reason: "unknown iss") }
        if let expectedBundleID, claims.bid != expectedBundleID { throw AppStoreJWTError(reason: "bid does not match") }
        return claims
    }
}

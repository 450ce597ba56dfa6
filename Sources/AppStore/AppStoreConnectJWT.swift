import Foundation
import StoreKitCrypto

/// The claims of an App Store Connect API token: a team key's, so no `bid`.
public struct AppStoreConnectJWTClaims: Codable, Sendable, Equatable {
    public var iss: String
    public var iat: Int64
    public var exp: Int64
    public var aud: String

    public init(iss: String, iat: Int64, exp: Int64, aud: String = AppStoreConnectJWT.audience) {
        self.iss = iss
        self.iat = iat
        self.exp = exp
        self.aud = aud
    }
}

/// ES256 bearer tokens for the App Store Connect API (Sales and Trends). Same signing as `AppStoreJWT`;
/// Apple refuses these when they live over 20 minutes.
public enum AppStoreConnectJWT {
    public static let audience = AppStoreJWT.audience // both APIs name the same audience
    public static let maximumLifetime: TimeInterval = 1200

    public static func make(issuerID: String, keyID: String, key: ES256PrivateKey, issuedAt: Date = Date(),
                            lifetime: TimeInterval = 600) throws(CryptoError) -> String {
        let times = ES256BearerToken.times(issuedAt: issuedAt, lifetime: lifetime, maximumLifetime: maximumLifetime)
        return try ES256BearerToken.sign(AppStoreConnectJWTClaims(iss: issuerID, iat: times.iat, exp: times.exp), keyID: keyID, key: key)
    }

    /// Checks signature and claims as Apple does (apple-sim's side). `leeway` absorbs clock skew.
    public static func verify(_ token: String, publicKey: ES256PublicKey, now: Date = Date(), expectedKeyID: String? = nil,
                              expectedIssuer: String? = nil, leeway: TimeInterval = 60) throws(AppStoreJWTError) -> AppStoreConnectJWTClaims {
        let claims: AppStoreConnectJWTClaims = try ES256BearerToken.verifiedClaims(token, publicKey: publicKey, expectedKeyID: expectedKeyID,
                                                                                   required: "iss, iat, exp, aud")
        try ES256BearerToken.checkTimes(aud: claims.aud, iat: claims.iat, exp: claims.exp, now: now, leeway: leeway,
                                        maximumLifetime: maximumLifetime)
        if let expectedIssuer, claims.iss != expectedIssuer { throw AppStoreJWTError(reason: "unknown iss") }
        return claims
    }
}

import Foundation

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
        let iat = Int64(issuedAt.timeIntervalSince1970.rounded(.down))
        let claims = AppStoreJWTClaims(iss: issuerID, iat: iat, exp: iat + Int64(min(max(lifetime, 1), maximumLifetime)), bid: bundleID)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let payload = (try? encoder.encode(claims)).map { [UInt8]($0) } ?? []
        return try JWSCompact.sign(header: JWSHeader(alg: "ES256", kid: keyID, typ: "JWT"), payload: payload, key: key)
    }

    /// Checks signature and claims; nil expectations are not compared. `leeway` absorbs clock skew.
    public static func verify(_ token: String, publicKey: ES256PublicKey, now: Date = Date(),
                              expectedKeyID: String? = nil, expectedIssuer: String? = nil, expectedBundleID: String? = nil,
                              leeway: TimeInterval = 60) throws(AppStoreJWTError) -> AppStoreJWTClaims {
        guard let jws = try? JWSCompact.parse(token) else { throw AppStoreJWTError(reason: "token is not a compact JWS") }
        guard jws.header.alg == "ES256" else { throw AppStoreJWTError(reason: "alg is not ES256") }
        guard jws.header.typ == "JWT" else { throw AppStoreJWTError(reason: "typ is not JWT") }
        guard let kid = jws.header.kid, !kid.isEmpty else { throw AppStoreJWTError(reason: "kid is missing") }
        if let expectedKeyID, kid != expectedKeyID { throw AppStoreJWTError(reason: "unknown kid") }
        guard publicKey.isValidSignature(jws.signature, for: jws.signingInput) else {
            throw AppStoreJWTError(reason: "signature does not verify")
        }
        guard let claims = try? JSONDecoder().decode(AppStoreJWTClaims.self, from: Data(jws.payload)) else {
            throw AppStoreJWTError(reason: "claims iss, iat, exp, aud, bid are required")
        }
        let nowSeconds = now.timeIntervalSince1970
        guard claims.aud == audience else { throw AppStoreJWTError(reason: "aud is not \(audience)") }
        guard Double(claims.exp) > nowSeconds - leeway else { throw AppStoreJWTError(reason: "token expired") }
        guard Double(claims.iat) <= nowSeconds + leeway else { throw AppStoreJWTError(reason: "iat is in the future") }
        guard claims.exp > claims.iat, Double(claims.exp - claims.iat) <= maximumLifetime else {
            throw AppStoreJWTError(reason: "exp must be after iat and at most 60 minutes later")
        }
        if let expectedIssuer, claims.iss != expectedIssuer { throw AppStoreJWTError(reason: "unknown iss") }
        if let expectedBundleID, claims.bid != expectedBundleID { throw AppStoreJWTError(reason: "bid does not match") }
        return claims
    }
}

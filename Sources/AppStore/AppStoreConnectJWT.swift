import Foundation

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
    public static let audience = "appstoreconnect-v1"
    public static let maximumLifetime: TimeInterval = 1200

    public static func make(issuerID: String, keyID: String, key: ES256PrivateKey, issuedAt: Date = Date(),
                            lifetime: TimeInterval = 600) throws(CryptoError) -> String {
        let iat = Int64(issuedAt.timeIntervalSince1970.rounded(.down))
        let claims = AppStoreConnectJWTClaims(iss: issuerID, iat: iat, exp: iat + Int64(min(max(lifetime, 1), maximumLifetime)))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let payload = (try? encoder.encode(claims)).map { [UInt8]($0) } ?? []
        return try JWSCompact.sign(header: JWSHeader(alg: "ES256", kid: keyID, typ: "JWT"), payload: payload, key: key)
    }

    /// Checks signature and claims as Apple does (apple-sim's side). `leeway` absorbs clock skew.
    public static func verify(_ token: String, publicKey: ES256PublicKey, now: Date = Date(), expectedKeyID: String? = nil,
                              expectedIssuer: String? = nil, leeway: TimeInterval = 60) throws(AppStoreJWTError) -> AppStoreConnectJWTClaims {
        guard let jws = try? JWSCompact.parse(token) else { throw AppStoreJWTError(reason: "token is not a compact JWS") }
        guard jws.header.alg == "ES256", jws.header.typ == "JWT" else { throw AppStoreJWTError(reason: "alg/typ are not ES256/JWT") }
        guard let kid = jws.header.kid, !kid.isEmpty else { throw AppStoreJWTError(reason: "kid is missing") }
        if let expectedKeyID, kid != expectedKeyID { throw AppStoreJWTError(reason: "unknown kid") }
        guard publicKey.isValidSignature(jws.signature, for: jws.signingInput) else { throw AppStoreJWTError(reason: "signature does not verify") }
        guard let claims = try? JSONDecoder().decode(AppStoreConnectJWTClaims.self, from: Data(jws.payload)) else {
            throw AppStoreJWTError(reason: "claims iss, iat, exp, aud are required")
        }
        let nowSeconds = now.timeIntervalSince1970
        guard claims.aud == audience else { throw AppStoreJWTError(reason: "aud is not \(audience)") }
        guard Double(claims.exp) > nowSeconds - leeway else { throw AppStoreJWTError(reason: "token expired") }
        guard Double(claims.iat) <= nowSeconds + leeway else { throw AppStoreJWTError(reason: "iat is in the future") }
        guard claims.exp > claims.iat, Double(claims.exp - claims.iat) <= maximumLifetime else {
            throw AppStoreJWTError(reason: "exp must be after iat and at most 20 minutes later")
        }
        if let expectedIssuer, claims.iss != expectedIssuer { throw AppStoreJWTError(reason: "unknown iss") }
        return claims
    }
}

import Foundation
import StoreKitCrypto

/// What App Store Server API and App Store Connect API tokens share: an ES256 compact JWS with
/// `kid` and `typ JWT`, and `aud`, `iat`, `exp` claims whose lifetime Apple bounds (60 and 20
/// minutes). Each token kind adds only its claims type and its limit.
enum ES256BearerToken {
    static func sign(_ claims: some Encodable, keyID: String, key: ES256PrivateKey) throws(CryptoError) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let payload = (try? encoder.encode(claims)).map { [UInt8]($0) } ?? []
        return try JWSCompact.sign(header: JWSHeader(alg: "ES256", kid: keyID, typ: "JWT"), payload: payload, key: key)
    }

    /// The header and signature checked, then the claims decoded; `required` names them in the refusal.
    static func verifiedClaims<Claims: Decodable>(_ token: String, publicKey: ES256PublicKey, expectedKeyID: String?,
                                                  required: String) throws(AppStoreJWTError) -> Claims {
        guard let jws = try? JWSCompact.parse(token) else { throw AppStoreJWTError(reason: "token is not a compact JWS") }
        guard jws.header.alg == "ES256" else { throw AppStoreJWTError(reason: "alg is not ES256") }
        guard jws.header.typ == "JWT" else { throw AppStoreJWTError(reason: "typ is not JWT") }
        guard let kid = jws.header.kid, !kid.isEmpty else { throw AppStoreJWTError(reason: "kid is missing") }
        if let expectedKeyID, kid != expectedKeyID { throw AppStoreJWTError(reason: "unknown kid") }
        guard publicKey.isValidSignature(jws.signature, for: jws.signingInput) else {
            throw AppStoreJWTError(reason: "signature does not verify")
        }
        guard let claims = try? JSONDecoder().decode(Claims.self, from: Data(jws.payload)) else {
            throw AppStoreJWTError(reason: "claims \(required) are required")
        }
        return claims
    }

    /// `aud`, then `exp` and `iat` against `now` (with `leeway` for clock skew), then the lifetime.
    static func checkTimes(aud: String, iat: Int64, exp: Int64, now: Date, leeway: TimeInterval,
                           maximumLifetime: TimeInterval) throws(AppStoreJWTError) {
        let nowSeconds = now.timeIntervalSince1970
        guard aud == AppStoreJWT.audience else { throw AppStoreJWTError(reason: "aud is not \(AppStoreJWT.audience)") }
        guard Double(exp) > nowSeconds - leeway else { throw AppStoreJWTError(reason: "token expired") }
        guard Double(iat) <= nowSeconds + leeway else { throw AppStoreJWTError(reason: "iat is in the future") }
        guard exp > iat, Double(exp - iat) <= maximumLifetime else {
            throw AppStoreJWTError(reason: "exp must be after iat and at most \(Int(maximumLifetime / 60)) minutes later")
        }
    }

    /// `iat` now (whole seconds) and `exp` after `lifetime`, clamped to 1 s ... `maximumLifetime`.
    static func times(issuedAt: Date, lifetime: TimeInterval, maximumLifetime: TimeInterval) -> (iat: Int64, exp: Int64) {
        let iat = Int64(issuedAt.timeIntervalSince1970.rounded(.down))
        return (iat, iat + Int64(min(max(lifetime, 1), maximumLifetime)))
    }
}

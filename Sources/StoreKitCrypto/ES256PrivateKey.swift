import COpenSSL
import Foundation

/// An EC P-256 private key: signs JWTs for the App Store Server API and, in the simulator and
/// tests, StoreKit JWS. Its text never appears in `description`, logs or errors.
public final class ES256PrivateKey: @unchecked Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// Owned; immutable after creation (OpenSSL allows concurrent signing with one EVP_PKEY).
    let pkey: OpaquePointer

    private init(owning pkey: OpaquePointer) { self.pkey = pkey }

    deinit { EVP_PKEY_free(pkey) }

    public static func generate() throws(CryptoError) -> ES256PrivateKey {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { throw .openSSL("EVP_PKEY_CTX_new_from_name") }
        defer { EVP_PKEY_CTX_free(context) }
        var pkey: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1,
              EVP_PKEY_CTX_set_group_name(context, "P-256") == 1,
              EVP_PKEY_generate(context, &pkey) == 1, let pkey else { throw .openSSL("EC P-256 key generation") }
        return ES256PrivateKey(owning: pkey)
    }

    /// PKCS#8 (`BEGIN PRIVATE KEY`, Apple's .p8 files) or SEC1 (`BEGIN EC PRIVATE KEY`), unencrypted.
    public convenience init(pem: String) throws(CryptoError) {
        let pkey = try CryptoMemoryBIO.reading(Array(pem.utf8)) { bio throws(CryptoError) in
            // A nil passphrase callback would prompt on a terminal for encrypted keys; "" refuses instead.
            var emptyPassphrase: [CChar] = [0]
            guard let pkey = PEM_read_bio_PrivateKey(bio, nil, nil, &emptyPassphrase) else {
                throw CryptoError("private key PEM", reason: "not an unencrypted PEM private key")
            }
            return pkey
        }
        ERR_clear_error()
        do {
            try ES256PublicKey.requireP256(pkey)
        } catch {
            throw CryptoError("private key PEM", reason: "not an EC P-256 key")
        }
        self.init(owning: pkey)
    }

    /// Reads a PEM key file (e.g. `APPSTORE_PRIVATE_KEY_FILE`). Errors name the path, never the content.
    public convenience init(pemFile path: String) throws(CryptoError) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CryptoError("private key file \(path)", reason: "cannot be read")
        }
        do {
            try self.init(pem: String(decoding: data, as: UTF8.self))
        } catch {
            throw CryptoError("private key file \(path)", reason: error.reason)
        }
    }

    /// Unencrypted PKCS#8 PEM. Secret: write it to a 0600 file, never to a log.
    public func pkcs8PEM() throws(CryptoError) -> String {
        let bytes = try CryptoMemoryBIO.writing("PEM_write_bio_PrivateKey") {
            PEM_write_bio_PrivateKey($0, pkey, nil, nil, 0, nil, nil)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    public var publicKey: ES256PublicKey {
        get throws(CryptoError) { try ES256PublicKey(der: ES256PublicKey.subjectPublicKeyInfo(pkey)) }
    }

    /// ES256 over `message`: SHA-256, ECDSA P-256, raw r‖s (64 bytes).
    public func signature(for message: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw .openSSL("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, pkey) == 1 else { throw .openSSL("EVP_DigestSignInit") }
        var length = 0
        guard EVP_DigestSign(context, nil, &length, message, message.count) == 1 else { throw .openSSL("EVP_DigestSign") }
        var der = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &der, &length, message, message.count) == 1 else { throw .openSSL("EVP_DigestSign") }
        guard let raw = ES256Signature.raw(fromDER: Array(der.prefix(length))) else {
            throw CryptoError("ES256 signature", reason: "unexpected DER signature")
        }
        return raw
    }

    public var description: String { "ES256PrivateKey(<redacted>)" }
    public var debugDescription: String { description }
}

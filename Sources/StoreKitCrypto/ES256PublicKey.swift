import COpenSSL
import Foundation

/// An EC P-256 public key that checks ES256 signatures (raw r‖s over SHA-256).
/// Immutable after creation; OpenSSL allows concurrent verifications with one EVP_PKEY.
public final class ES256PublicKey: @unchecked Sendable {
    let pkey: OpaquePointer

    /// Takes ownership of `pkey` (freed here when it is not a P-256 key).
    static func taking(_ pkey: OpaquePointer) throws(CryptoError) -> ES256PublicKey {
        try requireP256(pkey)
        return ES256PublicKey(owning: pkey)
    }

    private init(owning pkey: OpaquePointer) { self.pkey = pkey }

    /// Frees `pkey` and throws unless it is an EC P-256 key (ES256 allows no other curve).
    static func requireP256(_ pkey: OpaquePointer) throws(CryptoError) {
        guard isP256(pkey) else {
            EVP_PKEY_free(pkey)
            throw CryptoError("ES256 key", reason: "not an EC P-256 key")
        }
    }

    deinit { EVP_PKEY_free(pkey) }

    /// `-----BEGIN PUBLIC KEY-----` (SubjectPublicKeyInfo).
    public convenience init(pem: String) throws(CryptoError) {
        let pkey = try CryptoMemoryBIO.reading(Array(pem.utf8)) { bio throws(CryptoError) in
            guard let pkey = PEM_read_bio_PUBKEY(bio, nil, nil, nil) else { throw .openSSL("PEM_read_bio_PUBKEY") }
            return pkey
        }
        try Self.requireP256(pkey)
        self.init(owning: pkey)
    }

    /// DER SubjectPublicKeyInfo.
    public convenience init(der: [UInt8]) throws(CryptoError) {
        let pkey = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor = buffer.baseAddress
            return d2i_PUBKEY(nil, &cursor, buffer.count)
        }
        guard let pkey else { throw .openSSL("d2i_PUBKEY") }
        try Self.requireP256(pkey)
        self.init(owning: pkey)
    }

    public var derRepresentation: [UInt8] {
        get throws(CryptoError) { try Self.subjectPublicKeyInfo(pkey) }
    }

    public var pemRepresentation: String {
        get throws(CryptoError) {
            String(decoding: try CryptoMemoryBIO.writing("PEM_write_bio_PUBKEY") { PEM_write_bio_PUBKEY($0, pkey) }, as: UTF8.self)
        }
    }

    /// True only for a well-formed 64-byte signature that OpenSSL accepts for `message`.
    public func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
        guard let der = ES256Signature.der(fromRaw: signature), let context = EVP_MD_CTX_new() else { return false }
        defer {
            EVP_MD_CTX_free(context)
            ERR_clear_error()  // a failed verification queues errors nobody will read
        }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, pkey) == 1 else { return false }
        return EVP_DigestVerify(context, der, der.count, message, message.count) == 1
    }

    static func isP256(_ pkey: OpaquePointer) -> Bool {
        guard EVP_PKEY_get_base_id(pkey) == EVP_PKEY_EC else { return false }
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_group_name(pkey, &name, name.count, &length) == 1 else {
            ERR_clear_error()
            return false
        }
        let group = String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return group == "prime256v1" || group == "P-256"
    }

    static func subjectPublicKeyInfo(_ pkey: OpaquePointer) throws(CryptoError) -> [UInt8] {
        let length = i2d_PUBKEY(pkey, nil)
        guard length > 0 else { throw .openSSL("i2d_PUBKEY") }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor = buffer.baseAddress
            return i2d_PUBKEY(pkey, &cursor)
        }
        guard written == length else { throw .openSSL("i2d_PUBKEY") }
        return der
    }
}

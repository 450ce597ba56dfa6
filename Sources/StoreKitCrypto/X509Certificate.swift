import CCryptoShim
import COpenSSL
import Foundation

/// One parsed X.509 certificate. Immutable after creation, so it may be shared across tasks.
public final class X509Certificate: @unchecked Sendable {
    /// Owned reference.
    let x509: OpaquePointer

    /// Takes ownership of `x509`.
    init(owning x509: OpaquePointer) { self.x509 = x509 }

    deinit { X509_free(x509) }

    /// Exactly one DER certificate (trailing bytes are refused).
    public convenience init(der: [UInt8]) throws(CryptoError) {
        let parsed = der.withUnsafeBufferPointer { buffer -> (OpaquePointer?, Int) in
            guard let start = buffer.baseAddress else { return (nil, 0) }
            var cursor: UnsafePointer<UInt8>? = start
            let x509 = d2i_X509(nil, &cursor, buffer.count)
            return (x509, cursor.map { $0 - start } ?? 0)
        }
        guard let x509 = parsed.0 else { throw .openSSL("d2i_X509") }
        guard parsed.1 == der.count else {
            X509_free(x509)
            throw CryptoError("d2i_X509", reason: "trailing bytes after the certificate")
        }
        self.init(owning: x509)
    }

    /// The first certificate of a PEM text.
    public convenience init(pem: String) throws(CryptoError) {
        guard let first = try Self.certificates(pem: pem).first else {
            throw CryptoError("PEM certificate", reason: "no certificate found")
        }
        self.init(owning: first.retainedX509())
    }

    /// Every `BEGIN CERTIFICATE` block of a PEM text, in order.
    public static func certificates(pem: String) throws(CryptoError) -> [X509Certificate] {
        let found = try CryptoMemoryBIO.reading(Array(pem.utf8)) { bio in
            var found: [X509Certificate] = []
            while let x509 = PEM_read_bio_X509(bio, nil, nil, nil) { found.append(X509Certificate(owning: x509)) }
            return found
        }
        ERR_clear_error()  // the read that ends the loop always queues "no start line"
        return found
    }

    /// A PEM (one or more certificates) or DER file. Errors name the path only.
    public static func certificates(file path: String) throws(CryptoError) -> [X509Certificate] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CryptoError("certificate file \(path)", reason: "cannot be read")
        }
        let bytes = [UInt8](data)
        do throws(CryptoError) {
            if String(decoding: bytes.prefix(4096), as: UTF8.self).contains("-----BEGIN") {
                let found = try certificates(pem: String(decoding: bytes, as: UTF8.self))
                guard !found.isEmpty else { throw CryptoError("PEM", reason: "no certificate found") }
                return found
            }
            return [try X509Certificate(der: bytes)]
        } catch {
            throw CryptoError("certificate file \(path)", reason: error.description)
        }
    }

    /// A new reference for another owner.
    func retainedX509() -> OpaquePointer {
        X509_up_ref(x509)
        return x509
    }

    public var derRepresentation: [UInt8] {
        let length = i2d_X509(x509, nil)
        guard length > 0 else { return [] }
        var der = [UInt8](repeating: 0, count: Int(length))
        _ = der.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor = buffer.baseAddress
            return i2d_X509(x509, &cursor)
        }
        return der
    }

    public var pemRepresentation: String {
        let body = Data(derRepresentation).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        return "-----BEGIN CERTIFICATE-----\n\(body)\n-----END CERTIFICATE-----\n"
    }

    /// For messages only, e.g. "/CN=Apple Root CA - G3/OU=.../O=Apple Inc./C=US".
    public var subject: String {
        guard let text = X509_NAME_oneline(X509_get_subject_name(x509), nil, 0) else { return "?" }
        defer { ccryptoshim_free(text) }
        return String(cString: text)
    }

    public var notBefore: Date? { Self.date(X509_get0_notBefore(x509)) }
    public var notAfter: Date? { Self.date(X509_get0_notAfter(x509)) }

    /// Whether an extension with this dotted OID (e.g. "1.2.840.113635.100.6.11.1") is present.
    public func hasExtension(oid: String) -> Bool {
        guard let object = OBJ_txt2obj(oid, 1) else {
            ERR_clear_error()
            return false
        }
        defer { ASN1_OBJECT_free(object) }
        return X509_get_ext_by_OBJ(x509, object, -1) >= 0
    }

    /// The subject key when it is EC P-256 (the only kind ES256 allows).
    public func es256PublicKey() throws(CryptoError) -> ES256PublicKey {
        guard let pkey = X509_get_pubkey(x509) else { throw .openSSL("X509_get_pubkey") }  // a new reference
        return try ES256PublicKey.taking(pkey)
    }

    public var sha256Fingerprint: [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard X509_digest(x509, EVP_sha256(), &digest, &length) == 1 else { return [] }
        return Array(digest.prefix(Int(length)))
    }

    /// "63:34:3A:…" as `openssl x509 -fingerprint -sha256` prints it.
    public var sha256FingerprintText: String {
        sha256Fingerprint.map { String(format: "%02X", $0) }.joined(separator: ":")
    }

    static func date(_ time: UnsafePointer<ASN1_TIME>?) -> Date? {
        var seconds: Int64 = 0
        guard let time, ccryptoshim_asn1_time_to_unix(time, &seconds) == 1 else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }
}

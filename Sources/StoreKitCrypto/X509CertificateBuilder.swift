import COpenSSL
import Foundation

/// Builds EC-signed certificates: a self-signed root, or certificates issued by one. For the
/// simulator's signing chain and tests; production code only ever parses certificates.
public struct X509CertificateBuilder: Sendable {
    public var commonName: String
    public var serialNumber: Int
    public var notBefore: Date
    public var notAfter: Date
    public var isCertificateAuthority: Bool
    /// Non-critical extensions whose value is ASN.1 NULL — how Apple marks its receipt-signing
    /// leaf (1.2.840.113635.100.6.11.1) and WWDR intermediate (1.2.840.113635.100.6.2.1).
    public var markerExtensionOIDs: [String]

    public init(commonName: String, serialNumber: Int = 1, notBefore: Date, notAfter: Date,
                isCertificateAuthority: Bool, markerExtensionOIDs: [String] = []) {
        self.commonName = commonName
        self.serialNumber = serialNumber
        self.notBefore = notBefore
        self.notAfter = notAfter
        self.isCertificateAuthority = isCertificateAuthority
        self.markerExtensionOIDs = markerExtensionOIDs
    }

    public func selfSigned(key: ES256PrivateKey) throws(CryptoError) -> X509Certificate {
        try build(subjectKey: key.pkey, issuer: nil, issuerKey: key)
    }

    public func issued(for subjectKey: ES256PublicKey, by issuer: X509Certificate,
                       issuerKey: ES256PrivateKey) throws(CryptoError) -> X509Certificate {
        try build(subjectKey: subjectKey.pkey, issuer: issuer, issuerKey: issuerKey)
    }

    private func build(subjectKey: OpaquePointer, issuer: X509Certificate?,
                       issuerKey: ES256PrivateKey) throws(CryptoError) -> X509Certificate {
        guard let x509 = X509_new() else { throw .openSSL("X509_new") }
        let certificate = X509Certificate(owning: x509)  // frees x509 on every exit path
        guard X509_set_version(x509, 2) == 1,
              ASN1_INTEGER_set(X509_get_serialNumber(x509), serialNumber) == 1,
              ASN1_TIME_set(X509_getm_notBefore(x509), time_t(notBefore.timeIntervalSince1970)) != nil,
              ASN1_TIME_set(X509_getm_notAfter(x509), time_t(notAfter.timeIntervalSince1970)) != nil,
              X509_set_pubkey(x509, subjectKey) == 1 else { throw .openSSL("certificate fields") }
        try setSubject(x509)
        guard X509_set_issuer_name(x509, X509_get_subject_name(issuer?.x509 ?? x509)) == 1 else {
            throw .openSSL("X509_set_issuer_name")
        }
        var standard = isCertificateAuthority
            ? [(NID_basic_constraints, "critical,CA:TRUE"), (NID_key_usage, "critical,keyCertSign,cRLSign")]
            : [(NID_basic_constraints, "critical,CA:FALSE"), (NID_key_usage, "critical,digitalSignature")]
        standard.append((NID_subject_key_identifier, "hash"))
        if issuer != nil { standard.append((NID_authority_key_identifier, "keyid:always")) }
        for (nid, value) in standard { try addStandardExtension(x509, issuer: issuer?.x509 ?? x509, nid: nid, value: value) }
        for oid in markerExtensionOIDs { try addMarkerExtension(x509, oid: oid) }
        guard X509_sign(x509, issuerKey.pkey, EVP_sha256()) > 0 else { throw .openSSL("X509_sign") }
        return certificate
    }

    private func setSubject(_ x509: OpaquePointer) throws(CryptoError) {
        guard let name = X509_NAME_new() else { throw .openSSL("X509_NAME_new") }
        defer { X509_NAME_free(name) }
        guard X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, commonName, -1, -1, 0) == 1,
              X509_set_subject_name(x509, name) == 1 else { throw .openSSL("X509 subject") }  // copies the name
    }

    private func addStandardExtension(_ x509: OpaquePointer, issuer: OpaquePointer, nid: Int32, value: String) throws(CryptoError) {
        var context = X509V3_CTX()
        X509V3_set_ctx(&context, issuer, x509, nil, nil, 0)
        guard let extensionValue = X509V3_EXT_conf_nid(nil, &context, nid, value) else { throw .openSSL("X509V3_EXT_conf_nid") }
        defer { X509_EXTENSION_free(extensionValue) }
        guard X509_add_ext(x509, extensionValue, -1) == 1 else { throw .openSSL("X509_add_ext") }  // copies
    }

    private func addMarkerExtension(_ x509: OpaquePointer, oid: String) throws(CryptoError) {
        guard let object = OBJ_txt2obj(oid, 1) else { throw .openSSL("OBJ_txt2obj") }
        defer { ASN1_OBJECT_free(object) }
        guard let octets = ASN1_OCTET_STRING_new() else { throw .openSSL("ASN1_OCTET_STRING_new") }
        defer { ASN1_OCTET_STRING_free(octets) }
        let asn1Null: [UInt8] = [0x05, 0x00]
        guard ASN1_OCTET_STRING_set(octets, asn1Null, Int32(asn1Null.count)) == 1,
              let extensionValue = X509_EXTENSION_create_by_OBJ(nil, object, 0, octets) else {
            throw .openSSL("X509_EXTENSION_create_by_OBJ")
        }
        defer { X509_EXTENSION_free(extensionValue) }
        guard X509_add_ext(x509, extensionValue, -1) == 1 else { throw .openSSL("X509_add_ext") }
    }
}

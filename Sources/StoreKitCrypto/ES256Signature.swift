import COpenSSL

/// JWS carries ECDSA signatures as raw r‖s (2 × 32 bytes, RFC 7518 §3.4); OpenSSL speaks DER
/// `ECDSA-Sig-Value`. These convert between the two.
enum ES256Signature {
    static let rawLength = 64

    static func der(fromRaw raw: [UInt8]) -> [UInt8]? {
        guard raw.count == rawLength, let signature = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(signature) }
        let (r, s) = raw.withUnsafeBufferPointer { buffer in
            (BN_bin2bn(buffer.baseAddress, 32, nil), BN_bin2bn(buffer.baseAddress! + 32, 32, nil))
        }
        // ECDSA_SIG_set0 takes ownership only when it succeeds.
        guard let r, let s, ECDSA_SIG_set0(signature, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        let length = i2d_ECDSA_SIG(signature, nil)
        guard length > 0 else { return nil }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor = buffer.baseAddress
            return i2d_ECDSA_SIG(signature, &cursor)
        }
        return written == length ? der : nil
    }

    static func raw(fromDER der: [UInt8]) -> [UInt8]? {
        let signature = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }
        guard let signature else { return nil }
        defer { ECDSA_SIG_free(signature) }
        var raw = [UInt8](repeating: 0, count: rawLength)
        let ok = raw.withUnsafeMutableBufferPointer { buffer in
            // get0: the BIGNUMs stay owned by the signature.
            BN_bn2binpad(ECDSA_SIG_get0_r(signature), buffer.baseAddress, 32) == 32
                && BN_bn2binpad(ECDSA_SIG_get0_s(signature), buffer.baseAddress! + 32, 32) == 32
        }
        return ok ? raw : nil
    }
}

#if canImport(Glibc)
import CCryptoShim
import COpenSSL
import Glibc

/// The client side of TLS for the socket transport: TLS 1.2 or later, the peer's chain verified
/// against the system trust store (or a given CA file) and its name against the host. Never relaxed.
final class TLSClientContext: @unchecked Sendable {
    // Safety: configured once in init, then only read by OpenSSL (SSL_new is thread-safe on a context).
    let context: OpaquePointer

    init(trustedCertificatesFile: String?) throws(HTTPClientError) {
        guard let context = SSL_CTX_new(TLS_client_method()) else { throw .tlsFailure("cannot create a TLS context") }
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        let trusted = trustedCertificatesFile.map { SSL_CTX_load_verify_locations(context, $0, nil) }
            ?? SSL_CTX_set_default_verify_paths(context)
        guard ccryptoshim_ssl_ctx_require_tls12(context) == 1, trusted == 1 else {
            SSL_CTX_free(context)
            throw .tlsFailure("cannot load trusted certificates" + (trustedCertificatesFile.map { " from \($0)" } ?? ""))
        }
        self.context = context
    }

    deinit { SSL_CTX_free(context) }
}

/// One connection's TLS engine over memory BIOs: the connection moves the ciphertext with its own
/// non-blocking socket calls (send with MSG_NOSIGNAL), so OpenSSL never touches the socket and a
/// peer that vanishes mid-write cannot raise SIGPIPE. Loop-thread only.
final class TLSSession {
    enum Progress: Equatable { case done, needsMoreInput, failed(String) }
    enum Plaintext: Equatable { case bytes(Int), needsMoreInput, closed, failed(String) }

    private let ssl: OpaquePointer
    /// Ciphertext from the peer, written by `received`; and to the peer, drained by `takeCiphertext`.
    private let incoming: OpaquePointer
    private let outgoing: OpaquePointer

    init(context: TLSClientContext, host: String) throws(HTTPClientError) {
        guard let ssl = SSL_new(context.context) else { throw .tlsFailure("cannot create a TLS session") }
        guard let incoming = BIO_new(BIO_s_mem()), let outgoing = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            throw .tlsFailure("cannot create TLS buffers")
        }
        SSL_set_bio(ssl, incoming, outgoing)  // the session owns both from here
        self.ssl = ssl
        self.incoming = incoming
        self.outgoing = outgoing
        // SNI only for names; the name check covers literal addresses too.
        let isAddress = SocketAddress(numericHost: host, port: 0) != nil
        guard SSL_set1_host(ssl, host) == 1, isAddress || ccryptoshim_ssl_set_server_name(ssl, host) == 1 else {
            throw .tlsFailure("cannot set the expected host name")
        }
        SSL_set_connect_state(ssl)
    }

    deinit { SSL_free(ssl) }

    func handshake() -> Progress {
        ERR_clear_error()
        let result = SSL_do_handshake(ssl)
        if result == 1 { return .done }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return .needsMoreInput
        default: return .failed(failureReason())
        }
    }

    /// Ciphertext read from the socket.
    func received(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        _ = BIO_write(incoming, base, Int32(bytes.count))  // a memory BIO takes everything
    }

    /// Encrypts all of `plaintext` (a memory BIO never pushes back); nil on success.
    func encrypt(_ plaintext: UnsafeRawBufferPointer) -> String? {
        guard let base = plaintext.baseAddress, !plaintext.isEmpty else { return nil }
        ERR_clear_error()
        var written = 0
        let result = SSL_write_ex(ssl, base, plaintext.count, &written)
        return result == 1 && written == plaintext.count ? nil : failureReason()
    }

    /// Decrypted bytes into `buffer`, as far as the ciphertext received so far allows.
    func decrypt(into buffer: UnsafeMutableRawBufferPointer) -> Plaintext {
        ERR_clear_error()
        var count = 0
        if SSL_read_ex(ssl, buffer.baseAddress, buffer.count, &count) == 1 { return .bytes(count) }
        switch SSL_get_error(ssl, 0) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return .needsMoreInput
        case SSL_ERROR_ZERO_RETURN: return .closed
        default: return .failed(failureReason())
        }
    }

    /// Ciphertext waiting to be sent, removed from the session.
    func takeCiphertext() -> [UInt8] {
        let pending = Int(BIO_ctrl_pending(outgoing))
        guard pending > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: pending)
        let read = bytes.withUnsafeMutableBytes { BIO_read(outgoing, $0.baseAddress, Int32(pending)) }
        return Array(bytes.prefix(max(0, Int(read))))
    }

    /// Why the handshake or a record failed: the certificate check's verdict when that is what
    /// failed, otherwise OpenSSL's first queued error.
    private func failureReason() -> String {
        let verdict = SSL_get_verify_result(ssl)
        if verdict != X509_V_OK {
            return "certificate rejected: " + String(cString: X509_verify_cert_error_string(verdict))
        }
        let code = ERR_get_error()
        guard code != 0 else { return "connection closed during TLS" }
        var text = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &text, text.count)
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
#endif

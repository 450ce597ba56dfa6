import CCryptoShim
import COpenSSL
import Foundation

/// Why a certificate chain was refused: OpenSSL's verification message, no certificate contents.
public struct X509ChainError: Error, Sendable, Equatable, CustomStringConvertible {
    public var reason: String
    public var description: String { reason }
}

/// Trusted root certificates and chain verification against them at a chosen time.
/// Built once; OpenSSL's X509_STORE is safe to share between concurrent verifications.
public final class X509TrustStore: @unchecked Sendable {
    private let store: OpaquePointer
    public let roots: [X509Certificate]

    public init(roots: [X509Certificate]) throws(CryptoError) {
        guard !roots.isEmpty else { throw CryptoError("trust store", reason: "no trusted root certificates") }
        guard let store = X509_STORE_new() else { throw .openSSL("X509_STORE_new") }
        for root in roots where X509_STORE_add_cert(store, root.x509) != 1 {  // takes its own reference
            X509_STORE_free(store)
            throw .openSSL("X509_STORE_add_cert")
        }
        self.store = store
        self.roots = roots
    }

    deinit { X509_STORE_free(store) }

    /// Verifies `leaf` → `intermediates` (untrusted) → a trusted root, every certificate valid at
    /// `date`. Only the store's roots are trusted: a root sent along with the chain is never used.
    /// `expectedLength` pins the built chain's length (leaf + intermediates + root), so a leaf
    /// issued straight by a root, or a longer path, is refused.
    /// - Returns: the span in which every certificate of the built chain is valid (lets callers
    ///   reuse the result for another date without rebuilding the chain).
    @discardableResult
    public func verify(leaf: X509Certificate, intermediates: [X509Certificate], at date: Date,
                       expectedLength: Int? = nil) throws(X509ChainError) -> ClosedRange<Date> {
        guard let untrusted = ccryptoshim_x509_stack_new() else { throw X509ChainError(reason: "out of memory") }
        defer { ccryptoshim_x509_stack_free(untrusted) }
        for certificate in intermediates where ccryptoshim_x509_stack_push(untrusted, certificate.x509) != 1 {
            throw X509ChainError(reason: "out of memory")
        }
        guard let context = X509_STORE_CTX_new() else { throw X509ChainError(reason: "out of memory") }
        defer {
            X509_STORE_CTX_free(context)
            ERR_clear_error()
        }
        guard X509_STORE_CTX_init(context, store, leaf.x509, untrusted) == 1 else {
            throw X509ChainError(reason: "cannot initialise verification")
        }
        X509_STORE_CTX_set_time(context, 0, time_t(date.timeIntervalSince1970.rounded(.down)))
        guard X509_verify_cert(context) == 1 else {
            let code = X509_STORE_CTX_get_error(context)
            throw X509ChainError(reason: String(cString: X509_verify_cert_error_string(Int(code))))
        }
        let chain = X509_STORE_CTX_get0_chain(context)  // get0: owned by the context
        let length = Int(ccryptoshim_x509_stack_count(chain))
        if let expectedLength, length != expectedLength {
            throw X509ChainError(reason: "chain has \(length) certificates, expected \(expectedLength)")
        }
        var from = Date.distantPast, until = Date.distantFuture
        for index in 0..<length {
            guard let certificate = ccryptoshim_x509_stack_value(chain, Int32(index)),
                  let notBefore = X509Certificate.date(X509_get0_notBefore(certificate)),
                  let notAfter = X509Certificate.date(X509_get0_notAfter(certificate)) else {
                throw X509ChainError(reason: "unreadable validity dates")
            }
            from = max(from, notBefore)
            until = min(until, notAfter)
        }
        guard from <= until else { throw X509ChainError(reason: "empty validity window") }
        return from...until
    }
}

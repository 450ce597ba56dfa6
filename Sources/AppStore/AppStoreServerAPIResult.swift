/// What one Get Transaction Info call concluded. Texts are safe to store: they never contain
/// the bearer token or the response body.
public enum AppStoreServerAPIResult: Sendable, Equatable {
    /// The JWS Apple returned: verify it with `StoreKitSignedDataVerifier` before trusting it.
    /// `endpoint` is where it was found (production, or sandbox after a 4040010).
    case found(signedTransactionInfo: String, endpoint: AppleEnvironment)
    /// 4040010 from every endpoint asked.
    case notFound(detail: String)
    /// Try later. `status` is Apple's errorCode or the HTTP status; `retryAfter` when Apple sent one.
    case retry(reason: String, status: Int?, retryAfter: Duration?)
    /// Permanent (e.g. 4000006 invalid transaction id): retrying cannot help.
    case rejected(reason: String, status: Int?, detail: String)
    /// Our credentials were refused (401): an operator must fix the APPSTORE_* settings.
    case configError(status: Int, detail: String)
}

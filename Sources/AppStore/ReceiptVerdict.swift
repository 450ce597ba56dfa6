/// Permanent rejections; raw values are job outcomes of state `failed`.
public enum RejectionOutcome: String, Sendable, Equatable, CaseIterable {
    case invalidReceipt = "invalid_receipt"
    case wrongBundle = "wrong_bundle"
    case sandboxRejected = "sandbox_rejected"
    case noPurchase = "no_purchase"
}

/// What one verification attempt concluded. `reason` and `detail` are safe to log and store:
/// they never contain the receipt, the shared secret or Apple's response body.
public enum ReceiptVerdict: Sendable, Equatable {
    case verified(VerifiedReceipt)
    /// Try again later. `reason` is a short machine word (a metric label); `appleStatus` is the
    /// last Apple status or HTTP code; `retryAfter` is Apple's Retry-After when it sent one.
    case retry(reason: String, appleStatus: Int?, retryAfter: Duration?)
    case rejected(outcome: RejectionOutcome, appleStatus: Int?, detail: String)
    /// Not the buyer's fault (e.g. 21004, wrong shared secret): needs an operator.
    case configError(appleStatus: Int, detail: String)
}

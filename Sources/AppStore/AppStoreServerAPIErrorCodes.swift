import Foundation

/// Apple's `errorCode` values that change what the client does, and Retry-After parsing.
enum AppStoreServerAPIErrorCodes {
    static let transactionIDNotFound = 4040010
    static let invalidTransactionID = 4000006
    /// AccountNotFoundRetryable, AppNotFoundRetryable, OriginalTransactionIdNotFoundRetryable,
    /// GeneralInternalRetryable: Apple says to try again.
    static let retryable: Set<Int> = [4040002, 4040004, 4040006, 5000001]

    /// A bounded metric label for an error code.
    static func label(_ code: Int) -> String {
        retryable.contains(code) || [transactionIDNotFound, invalidTransactionID, 4290000, 5000000].contains(code)
            ? "error_\(code)" : "error_other"
    }

    /// Apple's 429 `Retry-After` is the UNIX time in milliseconds when requests may resume;
    /// a small number is read as HTTP delay-seconds, anything else as an HTTP-date. Capped at an hour.
    static func retryAfter(_ value: String?, now: Date = Date()) -> Duration? {
        guard let text = value?.trimmingCharacters(in: .whitespaces), let number = Double(text), number > 1e11 else {
            return RetryAfter.parse(value, now: now)
        }
        let seconds = min(max(number / 1000 - now.timeIntervalSince1970, 0), RetryAfter.cap)
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }
}

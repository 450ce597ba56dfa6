import Foundation

/// Apple's `errorCode` values that change what the client does, and Retry-After parsing.
public enum AppStoreServerAPIErrorCodes {
    public static let invalidTransactionID = 4000006
    /// InvalidPaginationTokenError, PaginationTokenExpiredError: start the span again from its first page.
    public static let invalidPaginationToken = 4000014
    public static let paginationTokenExpired = 4000017
    /// StartDateTooFarInPastError: Apple keeps 180 days of history.
    public static let startDateTooFarInPast = 4000012
    public static let invalidCustomerConsented = 4000035
    public static let invalidDeliveryStatus = 4000036
    public static let invalidSampleContentProvided = 4000041
    public static let invalidTransactionNotConsumable = 4000043
    public static let transactionIDNotFound = 4040010
    public static let rateLimitExceeded = 4290000
    public static let generalInternal = 5000000
    /// AccountNotFoundRetryable, AppNotFoundRetryable, OriginalTransactionIdNotFoundRetryable,
    /// GeneralInternalRetryable: Apple says to try again.
    public static let retryable: Set<Int> = [4040002, 4040004, 4040006, 5000001]

    /// A bounded metric label for an error code.
    static func label(_ code: Int) -> String {
        labelled.contains(code) ? "error_\(code)" : "error_other"
    }

    private static let labelled: Set<Int> = retryable.union([
        transactionIDNotFound, invalidTransactionID, rateLimitExceeded, generalInternal, invalidCustomerConsented,
        invalidPaginationToken, paginationTokenExpired,
    ])

    /// Apple's 429 `Retry-After` is the UNIX time in milliseconds when requests may resume;
    /// a small number is read as HTTP delay-seconds, anything else as an HTTP-date. Capped at an hour.
    public static func retryAfter(_ value: String?, now: Date = Date()) -> Duration? {
        guard let text = value?.trimmingCharacters(in: .whitespaces), let number = Double(text), number > 1e11 else {
            return RetryAfter.parse(value, now: now)
        }
        let seconds = min(max(number / 1000 - now.timeIntervalSince1970, 0), RetryAfter.cap)
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }
}

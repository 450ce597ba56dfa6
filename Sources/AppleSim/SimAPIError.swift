import Foundation

/// One answer of Apple's published "App Store Server API error codes" table that apple-sim gives:
/// the HTTP status Apple answers it with, its `errorCode` and its `errorMessage`, word for word.
public struct SimAPIError: Error, Sendable, Equatable, Hashable {
    public let name: String
    public let status: Int
    public let code: Int
    public let message: String

    init(_ name: String, _ status: Int, _ code: Int, _ message: String) {
        self.name = name
        self.status = status
        self.code = code
        self.message = message
    }

    public static let generalBadRequest = SimAPIError("GeneralBadRequestError", 400, 4000000, "Bad request.")
    public static let invalidTransactionID = SimAPIError("InvalidTransactionIdError", 400, 4000006, "Invalid transaction id.")
    public static let startDateTooFarInPast = SimAPIError(
        "StartDateTooFarInPastError", 400, 4000012, "Invalid request. The start date is earlier than the allowed start date.")
    public static let startDateAfterEndDate = SimAPIError(
        "StartDateAfterEndDateError", 400, 4000013, "Invalid request. The end date precedes the start date or the dates are the same.")
    public static let invalidPaginationToken = SimAPIError(
        "InvalidPaginationTokenError", 400, 4000014, "Invalid request. The pagination token is invalid.")
    public static let invalidStartDate = SimAPIError(
        "InvalidStartDateError", 400, 4000015, "Invalid request. The start date is not a timestamp value represented in milliseconds.")
    public static let invalidEndDate = SimAPIError(
        "InvalidEndDateError", 400, 4000016, "Invalid request. The end date is not a timestamp value represented in milliseconds.")
    public static let invalidNotificationType = SimAPIError(
        "InvalidNotificationTypeError", 400, 4000018, "Invalid request. The notification type or subtype is invalid.")
    public static let multipleFiltersSupplied = SimAPIError(
        "MultipleFiltersSuppliedError", 400, 4000019, "Invalid request. Supply either a transaction id or a notification type, but not both.")
    public static let invalidCustomerConsented = SimAPIError(
        "InvalidCustomerConsentedError", 400, 4000035,
        "Invalid request. The customer consented field is required and must indicate the customer consented")
    public static let invalidDeliveryStatus = SimAPIError(
        "InvalidDeliveryStatusError", 400, 4000036, "Invalid request. The delivery status field is invalid")
    public static let invalidSampleContentProvided = SimAPIError(
        "InvalidSampleContentProvidedError", 400, 4000041, "Invalid request. The sample content provided field is invalid")
    public static let invalidRefundPreference = SimAPIError(
        "InvalidRefundPreferenceError", 400, 4000044, "Invalid request. The refund preference field is invalid.")
    public static let transactionIDNotFound = SimAPIError("TransactionIdNotFoundError", 404, 4040010, "Transaction id not found.")
    public static let rateLimitExceeded = SimAPIError("RateLimitExceededError", 429, 4290000, "Rate limit exceeded.")
    public static let generalInternalRetryable = SimAPIError(
        "GeneralInternalRetryableError", 500, 5000001, "An unknown error occurred. Please try again.")

    /// Every coded answer apple-sim gives (a refused token is 401 with no body, as Apple's).
    public static let table: [SimAPIError] = [
        generalBadRequest, invalidTransactionID, startDateTooFarInPast, startDateAfterEndDate, invalidPaginationToken,
        invalidStartDate, invalidEndDate, invalidNotificationType, multipleFiltersSupplied, invalidCustomerConsented,
        invalidDeliveryStatus, invalidSampleContentProvided, invalidRefundPreference, transactionIDNotFound, rateLimitExceeded,
        generalInternalRetryable,
    ]

    public static func named(code: Int) -> SimAPIError? { table.first { $0.code == code } }
}

/// verifyReceipt status codes and what each means for a job.
enum AppleStatusCodes {
    static let ok = 0
    static let subscriptionExpired = 21006
    static let sandboxReceiptSentToProduction = 21007
    static let productionReceiptSentToSandbox = 21008
    static let malformedOrTemporary = 21002
    static let badSharedSecret = 21004

    enum Class: Equatable {
        case invalidReceipt(detail: String)
        case configError(detail: String)
        case retry(reason: String)
    }

    /// Classifies every status except 0/21006 (success) and 21007 (environment routing), which the
    /// client handles itself. 21002's last-attempt rule is also applied by the client.
    static func classify(_ status: Int, isRetryable: Bool, fromSandbox: Bool) -> Class {
        switch status {
        case 21002, 21005, 21009: return .retry(reason: "status_\(status)")
        case 21100...21199: return .retry(reason: "status_211xx")
        default: break
        }
        if isRetryable { return .retry(reason: "apple_retryable") }
        switch status {
        case 21000: return .invalidReceipt(detail: "Apple status 21000: the request could not be read")
        case 21003: return .invalidReceipt(detail: "Apple status 21003: the receipt could not be authenticated")
        case 21010: return .invalidReceipt(detail: "Apple status 21010: the account cannot be found or was deleted")
        case 21004: return .configError(detail: "Apple status 21004: the configured shared secret does not match the app's")
        case 21008 where fromSandbox:
            return .invalidReceipt(detail: "Apple status 21008: production receipt sent to the sandbox")
        default: return .retry(reason: "status_unknown")
        }
    }

    /// A bounded metric label for a status (Apple could send anything).
    static func resultLabel(_ status: Int) -> String {
        status == ok ? "ok" : (21000...21199).contains(status) ? "status_\(status)" : "status_other"
    }
}

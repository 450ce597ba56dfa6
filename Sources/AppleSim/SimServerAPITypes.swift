import AppStore
import Foundation

/// Answers the simulated App Store Server API gives instead of the real one: 429 with a
/// `Retry-After`, or a 5xx, for `count` requests after `skip` good ones (of one family, or any).
public struct SimAPIFault: Sendable {
    public var status: Int
    public var retryAfter: String?
    public var skip: Int
    public var count: Int
    public var family: AppStoreAPIFamily?

    public init(status: Int, retryAfter: String? = nil, skip: Int = 0, count: Int = 1, family: AppStoreAPIFamily? = nil) {
        self.status = status
        self.retryAfter = retryAfter
        self.skip = skip
        self.count = count
        self.family = family
    }

    /// Apple's errorCode for the status: RateLimitExceededError, GeneralInternalRetryableError, none.
    var errorCode: Int? {
        switch status {
        case 429: 4290000
        case 500: 5000001
        default: nil
        }
    }
}

/// One Send Consumption Information request the simulator accepted.
public struct SimConsumptionAnswer: Sendable, Equatable {
    public let transactionID: String
    public let request: ConsumptionRequest
    public let receivedAt: Date

    /// Apple's checks of a `ConsumptionRequest`, with the errorCode each failure gets.
    static func validate(_ object: [String: Any]) -> Result<ConsumptionRequest, SimErrorCode> {
        guard let consented = object["customerConsented"] as? Bool, consented else { return .failure(SimErrorCode(4000035)) }
        guard let delivery = (object["deliveryStatus"] as? String).flatMap(DeliveryStatus.init(rawValue:)) else {
            return .failure(SimErrorCode(4000036))
        }
        guard let sample = object["sampleContentProvided"] as? Bool else { return .failure(SimErrorCode(4000041)) }
        var percentage: Int?
        if let value = object["consumptionPercentage"] {
            guard let number = value as? Int, (0...ConsumptionRequest.fullConsumption).contains(number) else {
                return .failure(SimErrorCode(4000000))
            }
            percentage = number
        }
        var preference: RefundPreference?
        if let value = object["refundPreference"] {
            guard let parsed = (value as? String).flatMap(RefundPreference.init(rawValue:)) else { return .failure(SimErrorCode(4000000)) }
            preference = parsed
        }
        return .success(ConsumptionRequest(customerConsented: true, consumptionPercentage: percentage, deliveryStatus: delivery,
                                           refundPreference: preference, sampleContentProvided: sample))
    }
}

struct SimErrorCode: Error {
    let code: Int
    init(_ code: Int) { self.code = code }
}

enum SimHistoryAnswer {
    case page(NotificationHistoryResponse)
    case refused(SimServerAPI.Answer)
}

enum SimOrderAnswer {
    case found([JWSTransactionPayload])
    case refused(SimServerAPI.Answer)
}

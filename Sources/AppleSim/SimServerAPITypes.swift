import AppStore
import Foundation
import HTTP
import JSONWire

/// Answers the simulated App Store Server API gives instead of the real one: 429 with a
/// `Retry-After`, or a 5xx, for `count` requests after `skip` good ones (of one family, or any).
public struct SimAPIFault: Sendable {
    public var status: Int
    public var retryAfter: String?
    /// A Retry-After this long after the answer, written as Apple writes it (epoch milliseconds); wins over `retryAfter`.
    public var retryAfterDelay: Duration?
    public var skip: Int
    public var count: Int
    public var family: AppStoreAPIFamily?

    public init(status: Int, retryAfter: String? = nil, skip: Int = 0, count: Int = 1, family: AppStoreAPIFamily? = nil) {
        self.status = status
        self.retryAfter = retryAfter
        retryAfterDelay = nil
        self.skip = skip
        self.count = count
        self.family = family
    }

    /// 429 for one request of `family` after `skip` good ones, resuming `delay` after the answer.
    public static func rateLimited(for delay: Duration, skip: Int = 0, family: AppStoreAPIFamily? = nil) -> SimAPIFault {
        var fault = SimAPIFault(status: 429, skip: skip, family: family)
        fault.retryAfterDelay = delay
        return fault
    }

    /// The Retry-After header of an answer given at `now`.
    func retryAfterHeader(at now: Date) -> String? {
        guard let retryAfterDelay else { return retryAfter }
        return String(AppleTimestamp.instant(now.addingTimeInterval(retryAfterDelay.seconds)))
    }

    /// Apple's answer for the status: RateLimitExceededError, GeneralInternalRetryableError, none.
    var error: SimAPIError? {
        switch status {
        case 429: .rateLimitExceeded
        case 500: .generalInternalRetryable
        default: nil
        }
    }
}

/// One Send Consumption Information request the simulator accepted.
public struct SimConsumptionAnswer: Sendable, Equatable {
    public let transactionID: String
    public let request: ConsumptionRequest
    public let receivedAt: Date

    /// Apple's checks of a well-typed `ConsumptionRequest` (`SimRequestShape.consumption`): consent given,
    /// and a percentage of 0 for anything not delivered (UndeliveredConsumptionPercentageNonZeroError,
    /// answered like the out-of-range percentage, see `SimRequestShape.consumption`).
    static func validate(_ members: [String: JSONValue]) -> Result<ConsumptionRequest, SimAPIError> {
        guard members["customerConsented"] == .bool(true) else { return .failure(.invalidCustomerConsented) }
        guard let delivery = members["deliveryStatus"]?.stringValue.flatMap(DeliveryStatus.init(rawValue:)),
              case .bool(let sample)? = members["sampleContentProvided"] else { return .failure(.generalBadRequest) }
        let percentage = members["consumptionPercentage"]?.int64Value.map { Int($0) }
        guard delivery == .delivered || (percentage ?? 0) == 0 else { return .failure(.generalBadRequest) }
        return .success(ConsumptionRequest(customerConsented: true, consumptionPercentage: percentage, deliveryStatus: delivery,
                                           refundPreference: members["refundPreference"]?.stringValue.flatMap(RefundPreference.init(rawValue:)),
                                           sampleContentProvided: sample))
    }
}

enum SimHistoryAnswer {
    case page(NotificationHistoryResponse)
    case refused(SimServerAPI.Answer)
}

enum SimOrderAnswer {
    case found([JWSTransactionPayload])
    case refused(SimServerAPI.Answer)
}

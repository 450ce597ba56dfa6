import AppStore
import Foundation
import JSONWire

/// The documented type of each field a request body may carry, checked as strictly as Apple's
/// contract reads: an int64 is an integer literal (no fraction, no exponent, no string), a Boolean
/// is `true`/`false`, an enumeration one of its documented values. A field the endpoint does not
/// document is refused too, so a new field cannot go out in a shape nobody checked.
struct SimFieldRule: Sendable {
    enum Kind: Sendable {
        case timestamp
        case integer(ClosedRange<Int64>)
        case bool
        case string
        case oneOf(Set<String>)
    }

    let kind: Kind
    /// The error a value of the wrong type or out of range gets.
    let error: SimAPIError
}

struct SimRequestShape: Sendable {
    /// In the order Apple documents them, which is the order they are checked in.
    let fields: KeyValuePairs<String, SimFieldRule>
    let required: Set<String>

    /// `NotificationHistoryRequest`.
    static let notificationHistory = SimRequestShape(fields: [
        "startDate": SimFieldRule(kind: .timestamp, error: .invalidStartDate),
        "endDate": SimFieldRule(kind: .timestamp, error: .invalidEndDate),
        "notificationType": SimFieldRule(kind: .string, error: .invalidNotificationType),
        "notificationSubtype": SimFieldRule(kind: .string, error: .invalidNotificationType),
        "transactionId": SimFieldRule(kind: .string, error: .invalidTransactionID),
        "onlyFailures": SimFieldRule(kind: .bool, error: .generalBadRequest),
    ], required: ["startDate", "endDate"])

    /// `ConsumptionRequest` (Send Consumption Information v2). `consumptionPercentage` is an int32 of
    /// milliunits, 0…100000. Apple's table names ConsumptionPercentageOutOfRangeError for a value
    /// outside it, but the stored copy of its page we could read has no number, so apple-sim answers
    /// it with the generic GeneralBadRequestError (same status, same meaning to the client).
    static let consumption = SimRequestShape(fields: [
        "customerConsented": SimFieldRule(kind: .bool, error: .invalidCustomerConsented),
        "deliveryStatus": SimFieldRule(kind: .oneOf(Set(DeliveryStatus.allCases.map(\.rawValue))), error: .invalidDeliveryStatus),
        "sampleContentProvided": SimFieldRule(kind: .bool, error: .invalidSampleContentProvided),
        "consumptionPercentage": SimFieldRule(kind: .integer(0...Int64(ConsumptionRequest.fullConsumption)), error: .generalBadRequest),
        "refundPreference": SimFieldRule(kind: .oneOf(Set(RefundPreference.allCases.map(\.rawValue))), error: .invalidRefundPreference),
    ], required: ["customerConsented", "deliveryStatus", "sampleContentProvided"])

    /// The body's members when every one has its documented shape; otherwise Apple's error for the first that does not.
    func check(_ body: [UInt8]) -> Result<[String: JSONValue], SimAPIError> {
        guard case .object(let members)? = try? JSONValue.parse(body) else { return .failure(.generalBadRequest) }
        guard Set(members.keys).isSubset(of: fields.map(\.key)) else { return .failure(.generalBadRequest) }
        for (name, rule) in fields {
            guard let value = members[name], value != .null else {
                if required.contains(name) { return .failure(rule.error) }
                continue
            }
            guard Self.fits(value, rule.kind) else { return .failure(rule.error) }
        }
        return .success(members)
    }

    private static func fits(_ value: JSONValue, _ kind: SimFieldRule.Kind) -> Bool {
        switch (kind, value) {
        case (.timestamp, .number(let text)): return Int64(text).map { $0 >= 0 } ?? false
        case (.integer(let range), .number(let text)): return Int64(text).map(range.contains) ?? false
        case (.bool, .bool): return true
        case (.string, .string): return true
        case (.oneOf(let allowed), .string(let text)): return allowed.contains(text)
        default: return false
        }
    }

    /// A timestamp member already checked by `check`, as a date.
    static func date(_ value: JSONValue?) -> Date? {
        guard case .number(let text)? = value, let ms = Int64(text) else { return nil }
        return Date(timeIntervalSince1970: Double(ms) / 1000)
    }
}

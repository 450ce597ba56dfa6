import Foundation

/// Body of Send Consumption Information (`PUT /inApps/v2/transactions/consumption/{transactionId}`),
/// Apple's current `ConsumptionRequest`. Apple refuses (400, 4000035) any request whose
/// `customerConsented` is not true, so a request without consent is never built.
public struct ConsumptionRequest: Codable, Sendable, Equatable {
    public var customerConsented: Bool
    /// Milliunits: 0…100000 is 0…100 %. Passed through as the web tier gave it.
    public var consumptionPercentage: Int?
    public var deliveryStatus: DeliveryStatus
    public var refundPreference: RefundPreference?
    public var sampleContentProvided: Bool

    public init(customerConsented: Bool, consumptionPercentage: Int?, deliveryStatus: DeliveryStatus,
                refundPreference: RefundPreference?, sampleContentProvided: Bool) {
        self.customerConsented = customerConsented
        self.consumptionPercentage = consumptionPercentage
        self.deliveryStatus = deliveryStatus
        self.refundPreference = refundPreference
        self.sampleContentProvided = sampleContentProvided
    }

    /// The largest `consumptionPercentage` (100 % in milliunits).
    public static let fullConsumption = 100_000
}

/// `deliveryStatus`: whether the app delivered a working In-App Purchase.
public enum DeliveryStatus: String, Codable, Sendable, CaseIterable {
    case delivered = "DELIVERED"
    case undeliveredQualityIssue = "UNDELIVERED_QUALITY_ISSUE"
    case undeliveredWrongItem = "UNDELIVERED_WRONG_ITEM"
    case undeliveredServerOutage = "UNDELIVERED_SERVER_OUTAGE"
    case undeliveredOther = "UNDELIVERED_OTHER"
}

/// `refundPreference`: what we would like Apple to decide (Apple decides).
public enum RefundPreference: String, Codable, Sendable, CaseIterable {
    case decline = "DECLINE"
    case grantFull = "GRANT_FULL"
    case grantProrated = "GRANT_PRORATED"
}

/// Look Up Order ID (`GET /inApps/v1/lookup/{orderId}`): the order id is the one on the buyer's
/// e-mailed receipt from Apple.
public struct OrderLookupResponse: Codable, Sendable, Equatable {
    /// `OrderLookupStatus`: 0 valid, 1 invalid.
    public var status: Int
    /// JWS transactions: verify each before trusting it.
    public var signedTransactions: [String]

    public init(status: Int, signedTransactions: [String]) {
        self.status = status
        self.signedTransactions = signedTransactions
    }

    public static let valid = 0
    public static let invalid = 1

    enum CodingKeys: String, CodingKey { case status, signedTransactions }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        guard let status = c.lenientInt(.status) else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "status is required"))
        }
        self.status = status
        signedTransactions = (try? c.decodeIfPresent([String].self, forKey: .signedTransactions)) ?? []
    }
}

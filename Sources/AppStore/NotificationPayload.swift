import Foundation

/// The decoded `signedPayload` of an App Store Server Notification V2 (`ResponseBodyV2DecodedPayload`).
public struct NotificationPayload: Codable, Sendable, Equatable {
    /// e.g. ONE_TIME_CHARGE, REFUND, REFUND_REVERSED, CONSUMPTION_REQUEST, TEST.
    public var notificationType: String?
    public var subtype: String?
    public var notificationUUID: String?
    public var version: String?
    public var signedDate: Date?
    public var data: NotificationData?
    /// Present instead of `data` for RENEWAL_EXTENSION summaries.
    public var summary: NotificationSummary?

    public init(notificationType: String?, subtype: String? = nil, notificationUUID: String?, version: String? = "2.0",
                signedDate: Date? = nil, data: NotificationData? = nil, summary: NotificationSummary? = nil) {
        self.notificationType = notificationType
        self.subtype = subtype
        self.notificationUUID = notificationUUID
        self.version = version
        self.signedDate = signedDate
        self.data = data
        self.summary = summary
    }

    enum CodingKeys: String, CodingKey { case notificationType, subtype, notificationUUID, version, signedDate, data, summary }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        notificationType = c.lenientString(.notificationType)
        subtype = c.lenientString(.subtype)
        notificationUUID = c.lenientString(.notificationUUID)
        version = c.lenientString(.version)
        signedDate = c.millisecondsDate(.signedDate)
        data = try c.decodeIfPresent(NotificationData.self, forKey: .data)
        summary = try c.decodeIfPresent(NotificationSummary.self, forKey: .summary)
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(notificationType, forKey: .notificationType)
        try c.encodeIfPresent(subtype, forKey: .subtype)
        try c.encodeIfPresent(notificationUUID, forKey: .notificationUUID)
        try c.encodeIfPresent(version, forKey: .version)
        try c.encodeMilliseconds(signedDate, forKey: .signedDate)
        try c.encodeIfPresent(data, forKey: .data)
        try c.encodeIfPresent(summary, forKey: .summary)
    }

    /// The app identity fields, wherever this notification type carries them.
    var appIdentity: (bundleId: String?, appAppleId: Int64?, environment: String?)? {
        if let data { return (data.bundleId, data.appAppleId, data.environment) }
        if let summary { return (summary.bundleId, summary.appAppleId, summary.environment) }
        return nil
    }
}

public struct NotificationData: Codable, Sendable, Equatable {
    public var appAppleId: Int64?
    public var bundleId: String?
    public var bundleVersion: String?
    public var environment: String?
    /// A JWS of its own: verified like any signed transaction.
    public var signedTransactionInfo: String?
    public var signedRenewalInfo: String?
    public var status: Int?
    public var consumptionRequestReason: String?

    public init(appAppleId: Int64?, bundleId: String?, bundleVersion: String? = nil, environment: String?,
                signedTransactionInfo: String? = nil, signedRenewalInfo: String? = nil, status: Int? = nil,
                consumptionRequestReason: String? = nil) {
        self.appAppleId = appAppleId
        self.bundleId = bundleId
        self.bundleVersion = bundleVersion
        self.environment = environment
        self.signedTransactionInfo = signedTransactionInfo
        self.signedRenewalInfo = signedRenewalInfo
        self.status = status
        self.consumptionRequestReason = consumptionRequestReason
    }

    enum CodingKeys: String, CodingKey {
        case appAppleId, bundleId, bundleVersion, environment, signedTransactionInfo, signedRenewalInfo, status,
             consumptionRequestReason
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        appAppleId = c.lenientString(.appAppleId).flatMap { Int64($0) }
        bundleId = c.lenientString(.bundleId)
        bundleVersion = c.lenientString(.bundleVersion)
        environment = c.lenientString(.environment)
        signedTransactionInfo = c.lenientString(.signedTransactionInfo)
        signedRenewalInfo = c.lenientString(.signedRenewalInfo)
        status = c.lenientInt(.status)
        consumptionRequestReason = c.lenientString(.consumptionRequestReason)
    }
}

public struct NotificationSummary: Codable, Sendable, Equatable {
    public var appAppleId: Int64?
    public var bundleId: String?
    public var environment: String?

    public init(appAppleId: Int64?, bundleId: String?, environment: String?) {
        self.appAppleId = appAppleId
        self.bundleId = bundleId
        self.environment = environment
    }

    enum CodingKeys: String, CodingKey { case appAppleId, bundleId, environment }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        appAppleId = c.lenientString(.appAppleId).flatMap { Int64($0) }
        bundleId = c.lenientString(.bundleId)
        environment = c.lenientString(.environment)
    }
}

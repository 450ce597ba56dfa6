import Foundation

/// Body of Get Notification History (`POST /inApps/v1/notifications/history`), as Apple spells it.
/// Dates travel as int64 UNIX milliseconds (`AppleTimestamp`: the start truncated, the end rounded
/// up, so the span loses nothing); Apple keeps 180 days. Give either `transactionId` or
/// `notificationType`, never both.
public struct NotificationHistoryRequest: Codable, Sendable, Equatable {
    public var startDate: Date
    public var endDate: Date
    public var notificationType: String?
    public var notificationSubtype: String?
    public var transactionId: String?
    /// Only what has not reached our server (including what Apple is still retrying).
    public var onlyFailures: Bool?

    public init(startDate: Date, endDate: Date, notificationType: String? = nil, notificationSubtype: String? = nil,
                transactionId: String? = nil, onlyFailures: Bool? = nil) {
        self.startDate = startDate
        self.endDate = endDate
        self.notificationType = notificationType
        self.notificationSubtype = notificationSubtype
        self.transactionId = transactionId
        self.onlyFailures = onlyFailures
    }

    enum CodingKeys: String, CodingKey { case startDate, endDate, notificationType, notificationSubtype, transactionId, onlyFailures }

    /// How far back Apple keeps notification history: 180 days in production, 30 in the sandbox.
    public static func retention(_ environment: AppleEnvironment) -> TimeInterval {
        (environment == .production ? 180 : 30) * 86_400
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        guard let start = c.millisecondsDate(.startDate), let end = c.millisecondsDate(.endDate) else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "startDate and endDate are required"))
        }
        startDate = start
        endDate = end
        notificationType = c.lenientString(.notificationType)
        notificationSubtype = c.lenientString(.notificationSubtype)
        transactionId = c.lenientString(.transactionId)
        onlyFailures = c.lenientBool(.onlyFailures)
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeMilliseconds(startDate, forKey: .startDate, as: AppleTimestamp.start)
        try c.encodeMilliseconds(endDate, forKey: .endDate, as: AppleTimestamp.end)
        try c.encodeIfPresent(notificationType, forKey: .notificationType)
        try c.encodeIfPresent(notificationSubtype, forKey: .notificationSubtype)
        try c.encodeIfPresent(transactionId, forKey: .transactionId)
        try c.encodeIfPresent(onlyFailures, forKey: .onlyFailures)
    }
}

/// One page (at most 20 records) of Get Notification History. Ask again with `paginationToken`
/// (a query parameter) while `hasMore` is true.
public struct NotificationHistoryResponse: Codable, Sendable, Equatable {
    public var paginationToken: String?
    public var hasMore: Bool
    public var notificationHistory: [NotificationHistoryResponseItem]

    public init(paginationToken: String?, hasMore: Bool, notificationHistory: [NotificationHistoryResponseItem]) {
        self.paginationToken = paginationToken
        self.hasMore = hasMore
        self.notificationHistory = notificationHistory
    }

    enum CodingKeys: String, CodingKey { case paginationToken, hasMore, notificationHistory }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        paginationToken = c.lenientString(.paginationToken)
        hasMore = c.lenientBool(.hasMore) ?? false
        notificationHistory = (try? c.decodeIfPresent([NotificationHistoryResponseItem].self, forKey: .notificationHistory)) ?? []
    }
}

public struct NotificationHistoryResponseItem: Codable, Sendable, Equatable {
    /// The notification exactly as Apple would have posted it (`signedPayload` of `POST /v1/notifications`).
    public var signedPayload: String?
    /// At most six, newest last.
    public var sendAttempts: [SendAttemptItem]

    public init(signedPayload: String?, sendAttempts: [SendAttemptItem] = []) {
        self.signedPayload = signedPayload
        self.sendAttempts = sendAttempts
    }

    enum CodingKeys: String, CodingKey { case signedPayload, sendAttempts }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        signedPayload = c.lenientString(.signedPayload)
        sendAttempts = (try? c.decodeIfPresent([SendAttemptItem].self, forKey: .sendAttempts)) ?? []
    }
}

public struct SendAttemptItem: Codable, Sendable, Equatable {
    public var attemptDate: Date?
    /// `SendAttemptResult`: SUCCESS, TIMED_OUT, TLS_ISSUE, CIRCULAR_REDIRECT, NO_RESPONSE, SOCKET_ISSUE,
    /// UNSUPPORTED_CHARSET, INVALID_RESPONSE, PREMATURE_CLOSE, UNSUCCESSFUL_HTTP_RESPONSE_CODE, OTHER.
    public var sendAttemptResult: String?

    public init(attemptDate: Date?, sendAttemptResult: String?) {
        self.attemptDate = attemptDate
        self.sendAttemptResult = sendAttemptResult
    }

    enum CodingKeys: String, CodingKey { case attemptDate, sendAttemptResult }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        attemptDate = c.millisecondsDate(.attemptDate)
        sendAttemptResult = c.lenientString(.sendAttemptResult)
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeMilliseconds(attemptDate, forKey: .attemptDate)
        try c.encodeIfPresent(sendAttemptResult, forKey: .sendAttemptResult)
    }
}

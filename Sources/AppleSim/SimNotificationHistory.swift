import AppStore
import Foundation

/// What Get Notification History can answer: every notification the simulated App Store sent,
/// with whether it reached the developer's server. Pages of 20, as Apple's.
struct SimNotificationHistory: Sendable {
    struct Record: Sendable {
        let signedPayload: String
        let sentAt: Date
        let delivered: Bool
    }

    static let pageSize = 20
    private(set) var records: [Record] = []

    mutating func append(_ record: Record) {
        records.append(record)
    }

    enum Page {
        case page(NotificationHistoryResponse)
        /// 4000014 InvalidPaginationTokenError: unknown, or minted for another request body.
        case invalidToken
    }

    /// The page of `request` that `token` points at (the first without one). A token names the
    /// query it belongs to, so one from another query is refused like Apple refuses it.
    func page(_ request: NotificationHistoryRequest, token: String?) -> Page {
        let fingerprint = Self.fingerprint(request)
        var offset = 0
        if let token {
            guard let decoded = Data(base64Encoded: token).map({ String(decoding: $0, as: UTF8.self) }),
                  let separator = decoded.firstIndex(of: "@"), String(decoded[decoded.index(after: separator)...]) == fingerprint,
                  let value = Int(decoded[..<separator]), value >= 0 else { return .invalidToken }
            offset = value
        }
        let matching = records.filter { record in
            record.sentAt >= request.startDate && record.sentAt < request.endDate && !(request.onlyFailures == true && record.delivered)
        }.sorted { $0.sentAt < $1.sentAt }
        let slice = matching.dropFirst(offset).prefix(Self.pageSize)
        let next = offset + slice.count
        let hasMore = next < matching.count
        let items = slice.map { record in
            NotificationHistoryResponseItem(signedPayload: record.signedPayload, sendAttempts: [
                SendAttemptItem(attemptDate: record.sentAt, sendAttemptResult: record.delivered ? "SUCCESS" : "NO_RESPONSE"),
            ])
        }
        let token = hasMore ? Data("\(next)@\(fingerprint)".utf8).base64EncodedString() : nil
        return .page(NotificationHistoryResponse(paginationToken: token, hasMore: hasMore, notificationHistory: Array(items)))
    }

    /// The whole request body: Apple answers a token used with any other body as an invalid token.
    private static func fingerprint(_ request: NotificationHistoryRequest) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let body = (try? encoder.encode(request)) ?? Data()
        return String(UInt64(bitPattern: Int64(truncatingIfNeeded: body.reduce(into: 14_695_981_039_346_656_037 as UInt64) {
            $0 = ($0 ^ UInt64($1)) &* 1_099_511_628_211
        })), radix: 36)
    }
}

/// Requests per wall-clock second, by endpoint family: what `GET /sim/stats` reports so a test or
/// benchmark can check that the fleet never exceeded its limit.
struct SimRequestCounter: Sendable {
    private(set) var total = 0
    private(set) var byEndpoint: [String: Int] = [:]
    private(set) var perSecond: [Int64: Int] = [:]

    mutating func record(_ endpoint: String, at date: Date = Date()) {
        total += 1
        byEndpoint[endpoint, default: 0] += 1
        perSecond[Int64(date.timeIntervalSince1970.rounded(.down)), default: 0] += 1
    }

    var maxPerSecond: Int { perSecond.values.max() ?? 0 }

    var json: [String: Any] {
        [
            "requests_total": total,
            "by_endpoint": byEndpoint,
            "max_per_second": maxPerSecond,
            "per_second": perSecond.sorted { $0.key < $1.key }.map { ["second": $0.key, "requests": $0.value] },
        ]
    }
}

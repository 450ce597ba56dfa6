import AppStore
import Foundation
import HTTP
import Observability
import Postgres
import Queue

/// Notifications Apple could not deliver, pulled from Get Notification History
/// (`onlyFailures`, page by page until `hasMore` is false) and enqueued exactly as
/// `POST /v1/notifications` would enqueue them; a notification also delivered normally is applied
/// once (its notificationUUID is remembered by the notification job).
public struct NotificationHistoryPuller: Sendable {
    /// What one pull (or one slice of a pull) did.
    public struct Counts: Sendable, Equatable {
        public var span: DateInterval
        public var pages = 0
        public var notifications = 0
        /// New jobs; the rest were already queued (same payload delivered or pulled before).
        public var enqueued = 0
        /// The span was read to its last page.
        public var complete = false

        public var alreadyKnown: Int { notifications - enqueued }
    }

    /// The first periodic pull looks this far back; later ones start this much before the last one ended.
    public static let firstLookBack: TimeInterval = 86_400
    public static let overlap: TimeInterval = 600
    /// Apple keeps 180 days (30 in the sandbox); a start a day inside that is never refused as too far in the past.
    var oldestStart: TimeInterval { NotificationHistoryRequest.retention(environment) - 86_400 }
    /// Consecutive retryable failures of one page before the pull gives up (its cursor stays).
    static let maxConsecutiveFailures = 8

    let client: PostgresClient
    let api: AppStoreServerAPIClient
    let metrics: SettlementMetrics
    let logger: Logger
    let environment: AppleEnvironment
    private let store = NotificationHistoryStore()

    public init(client: PostgresClient, api: AppStoreServerAPIClient, metrics: SettlementMetrics, logger: Logger,
                environment: AppleEnvironment = .production) {
        self.client = client
        self.api = api
        self.metrics = metrics
        self.logger = logger
        self.environment = environment
    }

    /// `notifications backfill --since`: one pull of the last `since` seconds, now, outside the cursor.
    public func backfill(since: TimeInterval, now: Date = Date()) async throws -> Counts {
        try await backfill(DateInterval(start: max(now.addingTimeInterval(-since), now.addingTimeInterval(-oldestStart)), end: now))
    }

    /// One pull of `span`, outside the cursor (also a reconciliation gap's day: its undelivered notifications).
    public func backfill(_ span: DateInterval) async throws -> Counts {
        var token: String?
        return try await pull(span, from: { token }, budget: nil, maxPages: .max, save: { page, next, connection in
            token = next
            return try await store.enqueue(page, on: connection)
        }, restart: { token = nil })
    }

    /// The leader's duty: resumes the pull in progress, or starts one when `interval` seconds have
    /// passed since the last finished. Stops after `budget` (or `maxPages`) with the cursor saved, so
    /// the next run (of this process or a new leader) continues from the same page. nil: not due.
    /// Under a leader's `term`, nothing is asked or saved once the lease has ended (`LeaseEnded`);
    /// a page saved during a brief overlap is harmless (its cursor move is guarded by the token).
    public func pullIfDue(interval: TimeInterval, budget: Duration, maxPages: Int = .max, now: Date = Date(),
                          term: LeaderTerm? = nil) async throws -> Counts? {
        try term?.check()
        var cursor = try await store.cursor(environment, client: client)
        if cursor.span == nil {
            if let completed = cursor.completedAt, now.timeIntervalSince(completed) < interval { return nil }
            let start = cursor.pulledUntil.map { $0.addingTimeInterval(-Self.overlap) } ?? now.addingTimeInterval(-Self.firstLookBack)
            let span = DateInterval(start: max(start, now.addingTimeInterval(-oldestStart)), end: max(now, start))
            try await store.begin(environment, span: span, client: client)
            cursor = try await store.cursor(environment, client: client)
        }
        guard let span = cursor.span else { return nil }
        var token = cursor.pageToken
        let counts = try await pull(span, from: { token }, budget: .now + budget, maxPages: maxPages, term: term, save: { page, next, connection in
            let created = try await store.enqueue(page, on: connection)
            try await store.advance(environment, from: token, to: next, enqueued: created, finishedAt: next == nil ? Date() : nil,
                                    on: connection)
            token = next
            return created
        }, restart: {
            try await store.restartSpan(environment, client: client)
            token = nil
        })
        return counts
    }

    /// Pages from `token()` until `hasMore` is false, the budget ends or a permanent error.
    /// `save` enqueues a page's payloads and remembers the next token, in one transaction.
    private func pull(_ span: DateInterval, from token: () -> String?, budget: ContinuousClock.Instant?, maxPages: Int,
                      term: LeaderTerm? = nil, save: (_ payloads: [String], _ next: String?, PostgresConnection) async throws -> Int,
                      restart: () async throws -> Void) async throws -> Counts {
        let request = NotificationHistoryRequest(startDate: span.start, endDate: span.end, onlyFailures: true)
        var counts = Counts(span: span)
        var failures = 0
        while counts.pages < maxPages {
            try stillLeading(term, counts)
            switch await api.getNotificationHistory(request, paginationToken: token(), environment: environment) {
            case .success(let page):
                failures = 0
                try stillLeading(term, counts)
                let payloads = page.notificationHistory.compactMap(\.signedPayload).filter { !$0.isEmpty }
                let next = page.hasMore ? page.paginationToken : nil
                // The page and the cursor's move carry the term: saved after it ended, nothing is.
                let created = try await client.transaction { connection in
                    try await term?.check(on: connection)
                    return try await save(payloads, next, connection)
                }
                counts.pages += 1
                counts.notifications += payloads.count
                counts.enqueued += created
                metrics.historyEnqueued.add(Double(created))
                if next == nil {
                    counts.complete = true
                    return log(counts)
                }
            case .failure(let error):
                if case .rejected = error.kind, [AppStoreServerAPIErrorCodes.invalidPaginationToken,
                                                 AppStoreServerAPIErrorCodes.paginationTokenExpired].contains(error.status) {
                    try await restart()  // duplicates of the pages read again change nothing
                    continue
                }
                guard error.isRetryable, failures < Self.maxConsecutiveFailures else {
                    log(counts)
                    throw SettlementError("Get Notification History failed: \(error.description)")
                }
                failures += 1
                // The same page again after Apple's Retry-After (the fleet limiter holds it too) or a backoff.
                let wait = min(error.retryAfter ?? .milliseconds(250 << min(failures, 6)), .seconds(60))
                if let budget, ContinuousClock.now + wait > budget { return log(counts) }
                try await Task.sleep(for: wait)
            }
            if let budget, ContinuousClock.now > budget { break }
        }
        return log(counts)
    }

    /// Throws `LeaseEnded` (after logging what was pulled) once the leader's term is over.
    private func stillLeading(_ term: LeaderTerm?, _ counts: Counts) throws {
        guard let term, !term.isHeld else { return }
        log(counts)
        throw LeaseEnded(task: "notification_history")
    }

    @discardableResult
    private func log(_ counts: Counts) -> Counts {
        if counts.pages > 0 {
            logger.info("notification_history_pulled", [
                "environment": .string(environment.rawValue), "pages": .int(counts.pages), "notifications": .int(counts.notifications),
                "enqueued": .int(counts.enqueued), "complete": .bool(counts.complete),
            ])
        }
        return counts
    }
}

/// The periodic history pull as one of the maintenance leader's duties. It runs often and cheaply:
/// whether a pull is due, and where it stands, is read from the database each time.
public struct NotificationHistoryTask: MaintenanceTask {
    public let name = "notification_history"
    public let interval: Double
    let puller: NotificationHistoryPuller
    let pullInterval: TimeInterval
    /// Keeps one run short, so the leader's other duties (lease rescue) are not held up.
    let budget: Duration

    public init(puller: NotificationHistoryPuller, pullInterval: TimeInterval, budget: Duration = .seconds(10)) {
        self.puller = puller
        self.pullInterval = pullInterval
        self.budget = budget
        interval = min(60, max(1, pullInterval / 10))
    }

    public func run(term: LeaderTerm) async throws {
        _ = try await puller.pullIfDue(interval: pullInterval, budget: budget, term: term)
    }
}

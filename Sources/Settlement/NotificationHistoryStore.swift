import AppStore
import Foundation
import Postgres

/// Where the periodic history pull stands (one row per environment, migration 0010).
struct HistoryCursor: Sendable, Equatable {
    var pulledUntil: Date?
    var completedAt: Date?
    /// The pull in progress, if any, and its next page.
    var span: DateInterval?
    var pageToken: String?
}

/// Every SQL statement of the history pull. A page's notifications and the cursor move in one
/// transaction, so a crash, a 429 or a new leader resumes from the page after the last one saved.
struct NotificationHistoryStore: Sendable {
    static let readSQL = """
        SELECT pulled_until, completed_at, pull_start, pull_end, page_token FROM iap.notification_history_cursor WHERE environment = $1
        """

    func cursor(_ environment: AppleEnvironment, client: PostgresClient) async throws -> HistoryCursor {
        guard let row = try await client.query(Self.readSQL, [environment.rawValue]).first else { return HistoryCursor() }
        let start: Date? = try row.decode(at: 2), end: Date? = try row.decode(at: 3)
        return HistoryCursor(pulledUntil: try row.decode(at: 0), completedAt: try row.decode(at: 1),
                             span: start.flatMap { s in end.map { DateInterval(start: s, end: max(s, $0)) } }, pageToken: try row.decode(at: 4))
    }

    /// Starts a pull unless one is already in progress (two leaders overlapping start one).
    static let beginSQL = """
        INSERT INTO iap.notification_history_cursor (environment, pull_start, pull_end) VALUES ($1, $2, $3)
        ON CONFLICT (environment) DO UPDATE
        SET pull_start = excluded.pull_start, pull_end = excluded.pull_end, page_token = NULL, pages = 0, enqueued = 0, updated_at = now()
        WHERE iap.notification_history_cursor.pull_start IS NULL
        """

    func begin(_ environment: AppleEnvironment, span: DateInterval, client: PostgresClient) async throws {
        _ = try await client.query(Self.beginSQL, [environment.rawValue, span.start, span.end])
    }

    /// Every signedPayload exactly as `POST /v1/notifications` enqueues it; returns how many were new jobs.
    static let enqueueSQL = """
        SELECT count(*) FILTER (WHERE created)::bigint
        FROM iap.enqueue_jobs(array_fill('notification'::text, ARRAY[cardinality($1::text[])]),
                              array_fill(NULL::text, ARRAY[cardinality($1::text[])]), array_fill(NULL::text, ARRAY[cardinality($1::text[])]),
                              array_fill(NULL::text, ARRAY[cardinality($1::text[])]), $1::text[])
        """

    func enqueue(_ signedPayloads: [String], on connection: PostgresConnection) async throws -> Int {
        guard !signedPayloads.isEmpty else { return 0 }
        return try await connection.query(Self.enqueueSQL, [signedPayloads])[0].decode(Int.self, at: 0)
    }

    /// The page after `token` was enqueued: remember the next one. Guarded by the token read, so a
    /// second leader that got there first wins and this transaction rolls back.
    static let advanceSQL = """
        UPDATE iap.notification_history_cursor
        SET page_token = $3, pages = pages + 1, enqueued = enqueued + $4, updated_at = now()
        WHERE environment = $1 AND pull_start IS NOT NULL AND page_token IS NOT DISTINCT FROM $2
        """
    /// The last page: the pull is complete and the cursor moves to its end.
    static let finishSQL = """
        UPDATE iap.notification_history_cursor
        SET pulled_until = pull_end, completed_at = $3, pull_start = NULL, pull_end = NULL, page_token = NULL,
            pages = pages + 1, enqueued = enqueued + $4, updated_at = now()
        WHERE environment = $1 AND pull_start IS NOT NULL AND page_token IS NOT DISTINCT FROM $2
        """

    func advance(_ environment: AppleEnvironment, from token: String?, to next: String?, enqueued: Int, finishedAt: Date?,
                 on connection: PostgresConnection) async throws {
        let moved = if let finishedAt {
            try await connection.query(Self.finishSQL, [environment.rawValue, token, finishedAt, enqueued]).affectedRows
        } else {
            try await connection.query(Self.advanceSQL, [environment.rawValue, token, next, enqueued]).affectedRows
        }
        guard moved == 1 else { throw SettlementError("the notification history cursor moved under this pull (another leader?)") }
    }

    /// Apple no longer knows the token (expired or invalid): the span starts again from its first page.
    static let restartSQL = "UPDATE iap.notification_history_cursor SET page_token = NULL, updated_at = now() WHERE environment = $1"

    func restartSpan(_ environment: AppleEnvironment, client: PostgresClient) async throws {
        _ = try await client.query(Self.restartSQL, [environment.rawValue])
    }
}

import Postgres

/// The jobs page's search: one text (a user id, an order id, an Apple transaction id or a job
/// id — support rarely knows which one the buyer sent), filters, and a keyset cursor.
public struct JobSearchCriteria: Sendable, Equatable {
    public var text: String?
    public var state: String?
    public var outcome: String?
    public var kind: String?
    /// Show jobs with an id below this (the previous page's last id); never OFFSET.
    public var before: Int?

    public init(text: String? = nil, state: String? = nil, outcome: String? = nil, kind: String? = nil, before: Int? = nil) {
        self.text = text
        self.state = state
        self.outcome = outcome
        self.kind = kind
        self.before = before
    }

    /// nil when a filter is not a known value or the cursor is not a positive id.
    init?(_ fields: FormFields) {
        self.init(text: fields.text("q"), state: fields.text("state"), outcome: fields.text("outcome"), kind: fields.text("kind"))
        if let state, !JobVocabulary.states.contains(state) { return nil }
        if let outcome, !JobVocabulary.outcomes.contains(outcome) { return nil }
        if let kind, !JobVocabulary.kinds.contains(kind) { return nil }
        if let cursor = fields.text("before") {
            guard let id = Int(cursor), id > 0 else { return nil }
            before = id
        }
        if let text, text.count > 500 { return nil }
    }
}

public struct JobSearch: Sendable {
    let client: PostgresClient
    public static let pageSize = 50

    /// Each text arm is an equality on its own index of iap.job_requests (job_requests_by_user,
    /// job_requests_by_order, the primary key fed by the ledger's and the alerts' indexes; the
    /// iap.jobs view's id is the request's, migration 0024), so the planner ORs bitmaps instead of
    /// walking the table. The ledger and alert arms find the jobs that credited a buyer, or
    /// raised their alert, without naming them (a notification, a late order match, a lookup):
    /// by transaction, original transaction, user or order. The array form matters: an
    /// `id IN (subquery)` inside an OR cannot use an index.
    static let textCondition = """
        (user_id = $2 OR order_id = $2 OR id = ANY(ARRAY(
            SELECT job_id FROM iap.credits
            WHERE (transaction_id = $2 OR original_transaction_id = $2 OR user_id = $2 OR order_id = $2) AND job_id IS NOT NULL
            UNION SELECT job_id FROM iap.alerts
            WHERE (transaction_id = $2 OR user_id = $2 OR order_id = $2) AND job_id IS NOT NULL) || $3::bigint[]))
        """

    /// The side tables that hold a state's jobs (job_parked has no state column: all timed_out).
    static let sideTable = ["queued": "iap.job_ready", "retrying": "iap.job_ready", "attention": "iap.job_flagged", "failed": "iap.job_flagged"]

    /// The statement for a set of criteria: fixed fragments with numbered parameters, never values.
    static func sql(_ criteria: JobSearchCriteria) -> (sql: String, binds: [any PostgresEncodable]) {
        var conditions = ["id < $1"]
        var binds: [any PostgresEncodable] = [criteria.before ?? Int.max]
        if let text = criteria.text {
            conditions.append(textCondition)
            let asJobID = ConsoleFind.jobID(text).map { [$0] } ?? []
            binds += [text, asJobID]
        }
        for (column, value) in [("state", criteria.state), ("outcome", criteria.outcome), ("kind", criteria.kind)] {
            guard let value else { continue }
            binds.append(value)
            conditions.append("\(column) = $\(binds.count)")
            // A state with a side table (migration 0029) is found through it, newest id first: its
            // ids as one array (an `IN (subquery)` is walked job by job from the newest), only the
            // page's worth of them when nothing else narrows the search.
            if column == "state", let side = Self.sideTable[value] {
                let alone = criteria.text == nil && criteria.outcome == nil && criteria.kind == nil
                conditions.append("id = ANY(ARRAY(SELECT id FROM \(side) WHERE state = $\(binds.count) AND id < $1 ORDER BY id DESC"
                                  + (alone ? " LIMIT \(pageSize + 1)))" : "))"))
            }
        }
        binds.append(pageSize + 1)
        let sql = "SELECT \(JobSummary.columns) FROM iap.jobs WHERE \(conditions.joined(separator: " AND ")) ORDER BY id DESC LIMIT $\(binds.count)"
        return (sql, binds)
    }

    /// One page, newest first, and whether older jobs follow.
    public func page(_ criteria: JobSearchCriteria) async throws -> (jobs: [JobSummary], hasMore: Bool) {
        let (sql, binds) = Self.sql(criteria)
        let jobs = try await ClosedUnpaid.mark(try await client.query(sql, binds).map(JobSummary.decode), client)
        return (Array(jobs.prefix(Self.pageSize)), jobs.count > Self.pageSize)
    }
}

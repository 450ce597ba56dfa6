import Postgres

/// A job as claimed: everything a verifier needs, nothing it may change. (Its age and sweeps
/// stay in the database: no verifier reads them, so the claim does not send them.)
///
/// A claim's jobs share one immutable object for their small fields (`ClaimedJobs`): a job is
/// copied from its claim to its task, its result and its completion row, and a copy is one
/// reference count, not one per string; a claim of 1,000 jobs is one allocation, not 1,000. The
/// payload, a receipt of kilobytes, is the job's own, so a job still running does not keep its
/// whole claim's receipts alive.
public struct ClaimedJob: Sendable, Equatable {
    private let claim: ClaimedJobs
    private let index: Int
    public let payload: String

    // Each field is read in place (`jobs[index].id`): a copy of the whole element would count a
    // reference to each of its strings.
    public var id: Int { claim.jobs[index].id }
    public var kind: String { claim.jobs[index].kind }
    public var userID: String? { claim.jobs[index].userID }
    public var orderID: String? { claim.jobs[index].orderID }
    public var productID: String? { claim.jobs[index].productID }
    /// Attempts in this round, including the one now running.
    public var attempts: Int { claim.jobs[index].attempts }
    /// The claim's row in iap.job_leases (migration 0029), deleted once the claim's jobs are all let go.
    var leaseID: Int? { claim.leaseID }
    /// The job's row version as the claim left it (`ctid`): a batch of `done` results finds its
    /// rows by it (migration 0042). Nil for a job not claimed by `QueueStore`.
    var rowVersion: PostgresTID? { claim.jobs[index].rowVersion }
    /// How many sessions the pool had opened when the job was claimed (`PostgresClient.sessionsOpened`;
    /// -1 when not claimed through a pool). Once the pool has opened another, the job id may name a
    /// different job (a failover to a standby that lost the last commits gives ids out again).
    var sessionEpoch: Int { claim.sessionEpoch }

    public init(id: Int, kind: String, userID: String?, orderID: String?, productID: String?, payload: String, attempts: Int) {
        self.init(id: id, kind: kind, userID: userID, orderID: orderID, productID: productID, payload: payload, attempts: attempts,
                  leaseID: nil, sessionEpoch: -1)
    }

    init(id: Int, kind: String, userID: String?, orderID: String?, productID: String?, payload: String, attempts: Int, leaseID: Int?,
         rowVersion: PostgresTID? = nil, sessionEpoch: Int) {
        let fields = ClaimedJobs.Fields(id: id, kind: kind, userID: userID, orderID: orderID, productID: productID, attempts: attempts,
                                        rowVersion: rowVersion)
        self.init(ClaimedJobs(jobs: [fields], leaseID: leaseID, sessionEpoch: sessionEpoch), 0, payload: payload)
    }

    /// The `index`th job of `claim`.
    init(_ claim: ClaimedJobs, _ index: Int, payload: String) {
        self.claim = claim
        self.index = index
        self.payload = payload
    }

    public static func == (lhs: ClaimedJob, rhs: ClaimedJob) -> Bool {
        lhs.id == rhs.id && lhs.kind == rhs.kind && lhs.userID == rhs.userID && lhs.orderID == rhs.orderID
            && lhs.productID == rhs.productID && lhs.payload == rhs.payload && lhs.attempts == rhs.attempts
    }
}

/// The small fields of one claim's jobs, in one object the claim's `ClaimedJob`s share, with what
/// the claim gave all of them: its lease row and the pool's sessions when it was made.
final class ClaimedJobs: Sendable {
    struct Fields: Sendable {
        let id: Int
        let kind: String
        let userID: String?
        let orderID: String?
        let productID: String?
        let attempts: Int
        let rowVersion: PostgresTID?
    }

    let jobs: [Fields]
    let leaseID: Int?
    let sessionEpoch: Int

    init(jobs: [Fields], leaseID: Int?, sessionEpoch: Int) {
        self.jobs = jobs
        self.leaseID = leaseID
        self.sessionEpoch = sessionEpoch
    }
}

/// One claim of one job: what a settlement's pending announcements are kept by. A job id alone
/// is not enough: after a rescue, the same worker may hold a stale result of an earlier claim
/// and a result of the new one in two batches at once.
public struct JobRun: Hashable, Sendable {
    public let jobID: Int
    public let leaseID: Int?
    public let attempt: Int

    public init(jobID: Int, leaseID: Int?, attempt: Int) {
        self.jobID = jobID
        self.leaseID = leaseID
        self.attempt = attempt
    }
}

extension ClaimedJob {
    public var run: JobRun { JobRun(jobID: id, leaseID: leaseID, attempt: attempts) }
}

/// Where a finished job rests: the terminal values of `iap.jobs.state`.
public enum TerminalState: String, Sendable, Equatable {
    case done, failed, attention
}

/// What happens to a job after one attempt.
public struct JobOutcome: Sendable, Equatable {
    public enum Disposition: Sendable, Equatable {
        /// Final: a terminal state and an outcome that belongs to it (see docs/reference.md).
        case finish(TerminalState, outcome: String)
        /// Try again later; `notBefore` is a floor under the backoff (e.g. Retry-After).
        case retry(reason: String, notBefore: Duration? = nil)
    }

    public var disposition: Disposition
    public var appleStatus: Int?
    public var error: String?
    public var transactionIDs: [String]

    public init(_ disposition: Disposition, appleStatus: Int? = nil, error: String? = nil, transactionIDs: [String] = []) {
        self.disposition = disposition
        self.appleStatus = appleStatus
        self.error = error
        self.transactionIDs = transactionIDs
    }

    public static func finish(_ state: TerminalState, _ outcome: String, appleStatus: Int? = nil, error: String? = nil,
                              transactionIDs: [String] = []) -> JobOutcome {
        JobOutcome(.finish(state, outcome: outcome), appleStatus: appleStatus, error: error, transactionIDs: transactionIDs)
    }

    public static func retry(_ reason: String, notBefore: Duration? = nil, appleStatus: Int? = nil, error: String? = nil) -> JobOutcome {
        JobOutcome(.retry(reason: reason, notBefore: notBefore), appleStatus: appleStatus, error: error)
    }
}

/// A verifier's answer: either the outcome is already known, or `Work` must be settled
/// (e.g. credited) inside the completion transaction.
///
/// Indirect (one pointer): every async call on the way to Apple keeps a temporary for its answer
/// in a frame that stays allocated while the job waits; inline, each would hold the whole answer.
public indirect enum Verification<Work: Sendable>: Sendable {
    case decided(JobOutcome)
    case settle(Work)
}

public struct SettlementItem<Work: Sendable>: Sendable {
    public let job: ClaimedJob
    public let work: Work
}

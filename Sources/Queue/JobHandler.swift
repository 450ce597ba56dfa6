import Postgres

/// The seam between the generic engine and what a job means. The engine claims, runs
/// `verify` outside any transaction (it may take seconds: Apple), then calls `settle`
/// for a batch inside the completion transaction, after the batch's leases were checked
/// and locked, so a worker whose lease expired never settles anything.
public protocol JobHandler: Sendable {
    associatedtype Work: Sendable

    /// Starts on the claiming task and runs there until its first suspension (a request to
    /// Apple, usually), so a claim's jobs are started one after another, and one answered
    /// without suspending is followed by the next in the same task (`RunningJobs`): a
    /// verification that computes before it awaits anything (local signature checks) calls
    /// `Task.yield()` first, so that a claim's worth of them runs on every core.
    func verify(_ job: ClaimedJob) async -> Verification<Work>

    /// Returns one outcome per item, in order, and the writes that can wait for the jobs'
    /// completion (they go out with it and COMMIT in one round trip). Runs inside the
    /// completion transaction.
    func settle(_ items: [SettlementItem<Work>], on connection: PostgresConnection) async throws -> SettledBatch

    /// The transaction that settled these claims committed: announce what it did (logs,
    /// metrics, webhooks) now, not before, so nothing is announced that did not happen.
    func didCommit(_ runs: [JobRun])

    /// The transaction rolled back (it will be retried): forget what it would have announced.
    func didRollBack(_ runs: [JobRun])
}

extension JobHandler {
    public func didCommit(_ runs: [JobRun]) {}
    public func didRollBack(_ runs: [JobRun]) {}
}

/// Finishes every job at once as done/acknowledged: for benchmarks and drills.
/// `delay` simulates verification time.
public struct NoOpHandler: JobHandler {
    public let delay: Duration
    public init(delay: Duration = .zero) { self.delay = delay }

    public func verify(_ job: ClaimedJob) async -> Verification<Never> {
        if delay > .zero { try? await Task.sleep(for: delay) }
        return Self.acknowledged
    }

    /// Every answer is this one: built once (it is boxed), not per job.
    private static let acknowledged = Verification<Never>.decided(.finish(.done, "acknowledged"))

    public func settle(_ items: [SettlementItem<Never>], on connection: PostgresConnection) async throws -> SettledBatch {
        SettledBatch(outcomes: [])
    }
}

/// What `settle` decided for a batch: one outcome per item, and statements to run just before
/// the completion's own (in order; if one fails, nothing of the batch commits).
public struct SettledBatch: Sendable {
    public var outcomes: [JobOutcome]
    public var writes: [PostgresStatement]

    public init(outcomes: [JobOutcome], writes: [PostgresStatement] = []) {
        self.outcomes = outcomes
        self.writes = writes
    }
}

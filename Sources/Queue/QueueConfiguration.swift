import Foundation

public struct QueueConfiguration: Sendable {
    /// Written to `leased_by`: host, pid and a random suffix, unique per process run.
    public var workerID: String
    public var concurrency = 64
    public var claimBatch = 100
    public var leaseSeconds = 60.0
    public var retryPolicy = RetryPolicy.exponential(base: 1, cap: 600)
    public var maxAttempts = 6
    /// Backstop poll when no NOTIFY arrives; jittered ±25%.
    public var pollInterval = 1.0
    /// Most results written by one completion statement.
    public var completionBatch = 1_000
    /// Seconds a completion waits for more results when it would write less than a batch and no
    /// other is in flight (0: none). Jobs finish in bursts, a claim's worth at a time.
    public var completionLinger = 0.002
    /// Seconds a claim waits for more free slots when a backlog waits and it would claim less
    /// than a batch (0: none). Verifications end in bursts too: without it, the claimer takes the
    /// burst's first few jobs in a statement of their own (a commit and a flush) and the rest in
    /// the next.
    public var claimLinger = 0.002
    /// Claims in flight at once, each on its own connection, when free slots allow more than one
    /// batch: the next batch is claimed while the last one's rows are on their way.
    public var claimConcurrency = 2
    /// Completion transactions in flight at once (each on its own connection): settlement
    /// does a few statements per job, so one connection alone caps throughput.
    public var completionConcurrency = 4
    public var shutdownGrace = 25.0
    /// How long commit witnesses are kept. A lost COMMIT reply still unresolved after half of
    /// it is resolved by the jobs' own state: its witness may be gone, and a tombstone written
    /// then would call a committed batch rolled back.
    public var witnessRetention = 604_800.0
    public var listenForNotifications = true
    /// Connections outside the pool for the maintenance lease (0 or 1), counted in the budget
    /// `worker_started` prints.
    public var leaderConnections = 0

    public init(workerID: String = QueueConfiguration.makeWorkerID()) {
        self.workerID = workerID
    }

    /// A verifier call must end well inside the lease, or another worker may take the job.
    public var verifyDeadline: Double { max(leaseSeconds * 0.8, leaseSeconds - 10) }

    /// Completion loops for a pool of `poolSize` connections: one connection stays free for
    /// claims (maintenance and gauges share the pool too), whatever `concurrency` is.
    func completionLoops(poolSize: Int) -> Int { max(1, min(completionConcurrency, poolSize - 1)) }

    public static func makeWorkerID() -> String {
        let host = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "host"
        let suffix = String(UInt32.random(in: 0...UInt32.max), radix: 36)
        return "\(host):\(getpid()):\(suffix)"
    }
}

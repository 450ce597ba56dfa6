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
    /// Completion transactions in flight at once (each on its own connection): settlement
    /// does a few statements per job, so one connection alone caps throughput.
    public var completionConcurrency = 4
    public var shutdownGrace = 25.0
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

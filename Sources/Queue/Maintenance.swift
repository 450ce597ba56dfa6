import Foundation
import Observability
import Postgres
import Synchronization

/// A periodic duty that only one process in the fleet should perform at a time.
public protocol MaintenanceTask: Sendable {
    var name: String { get }
    /// Seconds between runs.
    var interval: Double { get }
    func run() async throws
}

/// Leadership by a session advisory lock held on a dedicated connection: whoever holds
/// it runs the maintenance tasks. When the holder dies its connection closes, the lock
/// is released, and another process takes over at its next election round.
public final class Maintenance: Sendable {
    /// Fixed advisory-lock key ("receipt-worker maintenance").
    public static let leaderLockKey: Int64 = 0x7277_6d61_696e_7421

    private let conninfo: String
    private let tasks: [any MaintenanceTask]
    private let logger: Logger
    private let electionInterval: Double
    private let stopped = Atomic<Bool>(false)
    private let leader = Atomic<Bool>(false)
    private let wake = WakeSignal()

    public init(conninfo: String, tasks: [any MaintenanceTask], logger: Logger, electionInterval: Double = 2) {
        self.conninfo = conninfo
        self.tasks = tasks
        self.logger = logger
        self.electionInterval = electionInterval
    }

    public var isLeader: Bool { leader.load(ordering: .relaxed) }

    public func stop() {
        stopped.store(true, ordering: .releasing)
        wake.wake()
    }

    public func run() async {
        var connection: PostgresConnection?
        var lastRun: [String: ContinuousClock.Instant] = [:]
        var wakeups = wake.stream.makeAsyncIterator()
        let sleeper = Task { [wake, electionInterval] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(electionInterval))
                wake.wake()
            }
        }
        while !stopped.load(ordering: .acquiring) {
            do {
                if connection == nil {
                    connection = try await PostgresConnection.connect(conninfo, applicationName: "receipt-worker-maintenance")
                }
                guard let held = connection else { continue }
                if leader.load(ordering: .relaxed) {
                    _ = try await held.query("SELECT 1") // still connected means still holding the lock
                } else if try await held.query("SELECT pg_try_advisory_lock($1)", Self.leaderLockKey)[0].decode(Bool.self, at: 0) {
                    leader.store(true, ordering: .relaxed)
                    logger.notice("maintenance_leader", ["tasks": .string(tasks.map(\.name).joined(separator: ","))])
                }
                if leader.load(ordering: .relaxed) {
                    for task in tasks {
                        if let last = lastRun[task.name], ContinuousClock.now - last < .seconds(task.interval) { continue }
                        lastRun[task.name] = .now
                        do {
                            try await task.run()
                        } catch {
                            logger.warning("maintenance_failed", ["task": .string(task.name), "error": .error(error)])
                        }
                    }
                }
            } catch {
                if leader.exchange(false, ordering: .relaxed) {
                    logger.warning("maintenance_leadership_lost", ["error": .error(error)])
                }
                if let old = connection { await old.close() }
                connection = nil
            }
            _ = await wakeups.next()
        }
        sleeper.cancel()
        if let connection {
            if leader.exchange(false, ordering: .relaxed) {
                _ = try? await connection.query("SELECT pg_advisory_unlock($1)", Self.leaderLockKey)
            }
            await connection.close()
        }
    }
}

/// Returns the jobs of crashed workers (lease expired) to the queue.
public struct LeaseRescuer: MaintenanceTask {
    public let name = "lease_rescuer"
    public let interval: Double
    let store: QueueStore
    let maxAttempts: Int
    let logger: Logger

    public init(store: QueueStore, interval: Double, maxAttempts: Int, logger: Logger) {
        self.store = store
        self.interval = interval
        self.maxAttempts = maxAttempts
        self.logger = logger
    }

    public func run() async throws {
        let rescued = try await store.rescueExpiredLeases(maxAttempts: maxAttempts)
        for job in rescued { logger.warning("lease_expired", ["job_id": .int(job.id), "state": .string(job.state)]) }
        if !rescued.isEmpty { try await store.notifyWorkers() }
    }
}

/// Re-queues timed_out jobs (Apple was unreachable for a whole round) with a fresh round.
public struct TimedOutSweeper: MaintenanceTask {
    public let name = "timed_out_sweeper"
    public let interval: Double
    let store: QueueStore
    let logger: Logger

    public init(store: QueueStore, interval: Double, logger: Logger) {
        self.store = store
        self.interval = interval
        self.logger = logger
    }

    public func run() async throws {
        let requeued = try await store.sweepTimedOut()
        logger.info("sweep", ["requeued": .int(requeued.count)])
        if !requeued.isEmpty { try await store.notifyWorkers() }
    }
}

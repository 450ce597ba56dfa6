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

/// Leadership by a lease in `iap.leader` (SPEC 8): whoever holds it runs the maintenance
/// tasks. The holder renews every TTL/3 and trusts the lease only until its own monotonic
/// clock says the TTL since the renewal was *sent* has passed (minus a margin), so a
/// process that was paused, partitioned or stuck on a silent connection stops its duties
/// before anyone else may take over. A vanished leader is replaced within one TTL plus
/// one election round; a clean shutdown resigns at once.
public final class Maintenance: Sendable {
    public static let leaseName = "maintenance"

    private let store: LeaderLeaseStore
    private let leaderID: String
    private let ttl: Double
    private let tasks: [any MaintenanceTask]
    private let logger: Logger
    private let dutyInterval: Double
    private let onLeadershipChange: @Sendable (Bool) -> Void
    private let stopped = Atomic<Bool>(false)
    /// Monotonic nanoseconds until which this process may act as leader.
    private let leaseUntil = Atomic<UInt64>(0)
    private let reportedLeader = Atomic<Bool>(false)
    private let wake = WakeSignal()

    /// - Parameters:
    ///   - ttl: the lease's length (`LEADER_TTL_SECONDS`); renewed every `ttl / 3`.
    ///   - dutyInterval: how often the leader looks for tasks that are due.
    public init(client: PostgresClient, leaderID: String, tasks: [any MaintenanceTask], logger: Logger,
                ttl: Double = 15, dutyInterval: Double = 2, onLeadershipChange: @escaping @Sendable (Bool) -> Void = { _ in }) {
        self.store = LeaderLeaseStore(client: client)
        self.leaderID = leaderID
        self.ttl = max(0.3, ttl)
        self.tasks = tasks
        self.logger = logger
        self.dutyInterval = dutyInterval
        self.onLeadershipChange = onLeadershipChange
    }

    /// Holds an unexpired lease by this process's own clock.
    public var isLeader: Bool { Self.now() < leaseUntil.load(ordering: .acquiring) }

    public func stop() {
        stopped.store(true, ordering: .releasing)
        wake.wake()
    }

    public func run() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.renewLoop() }
            group.addTask { await self.dutyLoop() }
            group.addTask {
                for await _ in self.wake.stream where self.stopped.load(ordering: .acquiring) { break }
            }
            _ = await group.next()
            group.cancelAll()
        }
        if isLeader {
            leaseUntil.store(0, ordering: .releasing)
            try? await store.resign(name: Self.leaseName, leaderID: leaderID)
        }
        noteLeadership()
    }

    private func renewLoop() async {
        let margin = min(1, ttl * 0.1) + ttl * 0.02
        while !Task.isCancelled && !stopped.load(ordering: .acquiring) {
            let sentAt = Self.now()
            do {
                let held = try await store.acquireOrRenew(name: Self.leaseName, leaderID: leaderID, ttl: ttl)
                leaseUntil.store(held ? sentAt + UInt64((ttl - margin) * 1e9) : 0, ordering: .releasing)
            } catch {
                // The lease ends by itself; until then this process may go on leading.
                logger.warning("leader_renew_failed", ["error": .error(error)])
            }
            noteLeadership()
            try? await Task.sleep(for: .seconds(ttl / 3))
        }
    }

    private func dutyLoop() async {
        var lastRun: [String: ContinuousClock.Instant] = [:]
        while !Task.isCancelled && !stopped.load(ordering: .acquiring) {
            for task in tasks {
                // Checked before every duty: a leader paused past its lease runs nothing more.
                guard noteLeadership(), !stopped.load(ordering: .acquiring) else { break }
                if let last = lastRun[task.name], ContinuousClock.now - last < .seconds(task.interval) { continue }
                lastRun[task.name] = .now
                do {
                    try await task.run()
                } catch {
                    logger.warning("maintenance_failed", ["task": .string(task.name), "error": .error(error)])
                }
            }
            try? await Task.sleep(for: .seconds(dutyInterval))
        }
    }

    /// Logs and reports a change of leadership; returns whether this process leads now.
    @discardableResult
    private func noteLeadership() -> Bool {
        let leading = isLeader && !stopped.load(ordering: .acquiring)
        guard reportedLeader.exchange(leading, ordering: .acquiringAndReleasing) != leading else { return leading }
        if leading {
            logger.notice("maintenance_leader", ["tasks": .string(tasks.map(\.name).joined(separator: ",")), "ttl": .double(ttl)])
        } else if stopped.load(ordering: .acquiring) {
            // A clean stop hands the lease back; nothing was lost that on-call should look at.
            logger.notice("maintenance_resigned", [:])
        } else {
            logger.warning("maintenance_leadership_lost", [:])
        }
        onLeadershipChange(leading)
        return leading
    }

    private static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
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

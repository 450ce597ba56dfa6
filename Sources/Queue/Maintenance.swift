import Foundation
import Observability
import Postgres
import Synchronization

/// A periodic duty that only one process in the fleet should perform at a time. It must stay
/// safe if two leaders overlap briefly (one guarded statement, or SKIP LOCKED), and stop when
/// `term` ends: a duty that pages or loops calls `term.check()` between steps.
public protocol MaintenanceTask: Sendable {
    var name: String { get }
    /// Seconds between runs.
    var interval: Double { get }
    func run(term: LeaderTerm) async throws
}

/// Leadership by a lease in `iap.leader`: whoever holds it runs the maintenance
/// tasks. The holder renews every TTL/3 on its own connection (never queued behind
/// completions), retries a failed renewal after a moment, and trusts the lease only until its
/// own monotonic clock says the TTL since the renewal was *sent* has passed (minus a margin), so
/// a process that was paused, partitioned or stuck on a silent connection stops its duties
/// before anyone else may take over. Each duty runs in a task cancelled when the lease ends.
/// A vanished leader is replaced within one TTL plus one election round; a clean shutdown
/// resigns at once.
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
    private let lease = LeaseClock()
    private let reportedLeader = Atomic<Bool>(false)
    private let wake = WakeSignal()

    /// - Parameters:
    ///   - client: where the lease is renewed: `LeaderLeaseStore.dedicatedClient` (the worker's
    ///     budget carves it out of the pool), or the shared pool when the budget has no room.
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
    public var isLeader: Bool { lease.end(of: nil) != nil }

    /// The term held now, if any.
    public var term: LeaderTerm? { lease.current() }

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
            lease.revoke()
            try? await store.resign(name: Self.leaseName, leaderID: leaderID)
        }
        noteLeadership()
    }

    /// After a failed renewal: soon, while the lease still holds and another try can save it.
    var quickRetry: Double { min(0.5, ttl / 10) }

    private func renewLoop() async {
        let margin = min(1, ttl * 0.1) + ttl * 0.02
        var failures = 0
        while !Task.isCancelled && !stopped.load(ordering: .acquiring) {
            let sentAt = ContinuousClock.now
            var pause = ttl / 3
            do {
                let fence = try await store.acquireOrRenew(name: Self.leaseName, leaderID: leaderID, ttl: ttl)
                if let fence {
                    lease.granted(sentAt: sentAt, length: .seconds(ttl - margin), fence: fence)
                } else {
                    lease.revoke()
                }
                if failures > 0, fence != nil { logger.notice("leader_renewed", ["failures": .int(failures)]) }
                failures = 0
            } catch {
                // The lease ends by itself; until then this process may go on leading.
                failures += 1
                let remaining = lease.end(of: nil).map { ($0 - .now) / .seconds(1) }
                var fields: [(key: String, value: LogValue)] = [("error", .error(error)), ("failures", .int(failures))]
                if let remaining { fields.append(("lease_left_seconds", .double((remaining * 100).rounded() / 100))) }
                logger.log(.warning, "leader_renew_failed", fields: fields)
                if remaining != nil { pause = quickRetry }
            }
            noteLeadership()
            try? await Task.sleep(for: .seconds(pause))
        }
    }

    private func dutyLoop() async {
        var lastRun: [String: ContinuousClock.Instant] = [:]
        while !Task.isCancelled && !stopped.load(ordering: .acquiring) {
            for task in tasks {
                // Checked before every duty: a leader paused past its lease runs nothing more.
                guard noteLeadership(), !stopped.load(ordering: .acquiring), let term = lease.current() else { break }
                if let last = lastRun[task.name], ContinuousClock.now - last < .seconds(task.interval) { continue }
                lastRun[task.name] = .now
                await runDuty(task, under: term)
            }
            try? await Task.sleep(for: .seconds(dutyInterval))
        }
    }

    /// Runs one duty in a task that is cancelled when `term` ends (or the process stops).
    private func runDuty(_ task: any MaintenanceTask, under term: LeaderTerm) async {
        let started = ContinuousClock.now
        let interrupted: Bool
        do {
            interrupted = try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask {
                    try await task.run(term: term)
                    return false
                }
                group.addTask {
                    await term.ended()
                    return !Task.isCancelled
                }
                let first = try await group.next() ?? false
                group.cancelAll()
                return first
            }
        } catch {
            if error is LeaseEnded || (error is CancellationError && !term.isHeld) {
                logInterrupted(task, started: started)
            } else if !(error is CancellationError) {
                logger.warning("maintenance_failed", ["task": .string(task.name), "error": .error(error)])
            }
            return
        }
        if interrupted { logInterrupted(task, started: started) }
    }

    /// On-call: a duty stopped part-way because the lease ended; the next leader resumes it.
    private func logInterrupted(_ task: any MaintenanceTask, started: ContinuousClock.Instant) {
        let ran = (ContinuousClock.now - started) / .seconds(1)
        logger.warning("maintenance_duty_interrupted", ["task": .string(task.name), "reason": .string("lease_ended"),
                                                        "ran_seconds": .double((ran * 1000).rounded() / 1000)])
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
        orphanWalk = JobTableWalk(interval: interval)
    }

    /// Running jobs no lease row names (claimed by a worker built before migration 0029, or
    /// leased by hand) are looked for a slice of the table per run, the whole of it every 10 minutes.
    private let orphanWalk: JobTableWalk

    public func run(term: LeaderTerm) async throws {
        var rescued = try await store.rescueExpiredLeases(maxAttempts: maxAttempts, under: term)
        if let slice = try await orphanWalk.nextSlice(of: store, under: term) {
            rescued += try await store.rescueOrphanedLeases(maxAttempts: maxAttempts, ids: slice, under: term)
        }
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

    public func run(term: LeaderTerm) async throws {
        let requeued = try await store.sweepTimedOut(under: term)
        logger.info("sweep", ["requeued": .int(requeued.count)])
        if !requeued.isEmpty { try await store.notifyWorkers() }
    }
}

/// Puts jobs moved straight in iap.job_queue (not through the iap.jobs view, whose trigger
/// places them at once) into the side set their state names (migration 0038): without it a job
/// set to `queued` by hand would never be claimed. It must look at every job, so it reads a slice
/// of the table per run (`JobTableWalk`): the whole of it every 10 minutes, newest jobs first.
public struct StrayJobPlacer: MaintenanceTask {
    public let name = "stray_job_placer"
    public static let defaultInterval: Double = 15
    public let interval: Double
    let store: QueueStore
    let logger: Logger
    private let walk: JobTableWalk

    public init(store: QueueStore, interval: Double = StrayJobPlacer.defaultInterval, logger: Logger) {
        self.store = store
        self.interval = interval
        self.logger = logger
        walk = JobTableWalk(interval: interval)
    }

    public func run(term: LeaderTerm) async throws {
        guard let slice = try await walk.nextSlice(of: store, under: term) else { return }
        let placed = try await store.placeStrayJobs(ids: slice, under: term)
        guard placed > 0 else { return }
        logger.warning("stray_jobs_placed", ["jobs": .int(placed)])
        try await store.notifyWorkers()
    }
}

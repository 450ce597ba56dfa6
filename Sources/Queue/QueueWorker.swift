import Foundation
import Observability
import Postgres
import Synchronization

/// The worker pool of one process: claims runnable jobs in batches (only as many as it
/// has free slots), verifies them (a task for each verification that waits, `RunningJobs`),
/// and hands results to the batch completer. `run` returns after `shutdown()`: claiming
/// stops, in-flight jobs get `shutdownGrace` to finish, the rest are released to the queue.
public final class QueueWorker: Sendable {
    public let configuration: QueueConfiguration
    private let store: QueueStore
    private let verify: @Sendable (ClaimedJob) async -> JobVerdict
    private let logger: Logger
    private let metrics: QueueMetrics
    private let listener: PostgresConfiguration?
    private let completer: BatchCompleter
    private let completionLoops: Int
    private let wake = WakeSignal()
    private let stopping = Atomic<Bool>(false)
    private let inflight = Atomic<Int>(0)
    /// In-flight jobs by claim: the takers running them (to cancel one past its deadline) and deadlines.
    private let running = Mutex(RunningJobs())
    /// Jobs stopped by shutdown: released, attempt not burnt.
    private let cancelled = Mutex<[ClaimedJob]>([])
    /// Jobs cancelled by the deadline watchdog (they finish as a retry, not a release).
    private let overdue = Mutex<Set<Int>>([])

    private let held = HeldJobs()
    private let claims: Mutex<ClaimsInFlight>
    private let graceDeadline = Mutex<ContinuousClock.Instant?>(nil)
    private let healthy = Atomic<Bool>(true)
    /// Payloads of jobs this process sent back for a retry: their next claim here leaves them out.
    private let payloads = PayloadCache()

    /// The store's client serves claims and completions; `listener` (nil: poll only) gets
    /// its own LISTEN connection, the only one outside the pool.
    public init(store: QueueStore, handler: some JobHandler, configuration: QueueConfiguration, logger: Logger,
                metrics: QueueMetrics, listener: PostgresConfiguration?) {
        let handler = ErasedHandler(handler)
        self.store = store
        verify = handler.verify
        self.configuration = configuration
        self.logger = logger.with(["worker": .string(configuration.workerID)])
        self.metrics = metrics
        self.listener = listener
        completionLoops = configuration.completionLoops(poolSize: store.client.maxConnections)
        claims = Mutex(ClaimsInFlight(most: configuration.claimConcurrency, batch: configuration.claimBatch,
                                      concurrency: configuration.concurrency))
        completer = BatchCompleter(store: store, handler: handler, configuration: configuration, logger: self.logger, metrics: metrics,
                                   loops: completionLoops, held: held, claimer: wake, payloads: payloads)
    }

    public convenience init(store: QueueStore, handler: some JobHandler, configuration: QueueConfiguration, logger: Logger,
                            metrics: QueueMetrics, listenerConninfo: String?) {
        self.init(store: store, handler: handler, configuration: configuration, logger: logger, metrics: metrics,
                  listener: listenerConninfo.map { PostgresConfiguration(conninfo: $0, applicationName: "receipt-worker-listen") })
    }

    /// False while claims fail (database unreachable); for /readyz.
    public var isHealthy: Bool { healthy.load(ordering: .relaxed) && !stopping.load(ordering: .relaxed) }
    public var inflightCount: Int { inflight.load(ordering: .relaxed) }

    /// Begins a graceful stop; `run` returns when it is done.
    public func shutdown() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        graceDeadline.withLock { $0 = .now + .seconds(configuration.shutdownGrace) }
        wake.wake()
    }

    /// Whether the worker keeps a LISTEN session of its own.
    private var listens: Bool { configuration.listenForNotifications && listener != nil }

    /// The connection budget: pooled connections, the lease's session (carved out of
    /// DATABASE_POOL_SIZE) and the LISTEN session, whatever the concurrency.
    public var databaseConnectionsMax: Int {
        store.client.maxConnections + (listens ? 1 : 0) + configuration.leaderConnections
    }

    public func run() async {
        logger.info("worker_started", ["concurrency": .int(configuration.concurrency), "claim_batch": .int(configuration.claimBatch),
                                       "db_pool_size": .int(store.client.maxConnections), "db_listen_connections": .int(listens ? 1 : 0),
                                       "db_leader_connections": .int(configuration.leaderConnections),
                                       "db_connections_max": .int(databaseConnectionsMax)])
        let listener = startListener()
        let poller = Task { [wake, configuration] in
            while !Task.isCancelled {
                let jitter = Double.random(in: 0.75...1.25)
                try? await Task.sleep(for: .seconds(configuration.pollInterval * jitter))
                wake.wake()
            }
        }
        let completions = (0..<completionLoops).map { loop in
            Task { [self] in
                await completer.run(loop: loop, abandonAfter: { self.graceDeadline.withLock { $0.map { $0 + .seconds(5) } } })
            }
        }
        let watchdog = Task { await cancelOverdueJobs() }
        await claimLoop()
        await drain()
        watchdog.cancel()
        completer.close()
        for completion in completions { await completion.value }
        // The lease rows of the last claims, let go of after the last completion was written.
        do { try await store.dropLeases(held.takeDroppableLeases(sessionsOpened: store.client.sessionsOpened)) } catch {
            logger.notice("lease_rows_left", ["error": .error(error), "hint": "the rescuer deletes them when they expire"])
        }
        poller.cancel()
        if let listener { await listener.stop() }
        logger.info("worker_stopped", ["claimed_left": .int(running.withLock { $0.count })])
    }

    private func startListener() -> PostgresListener? {
        guard configuration.listenForNotifications, let configuration = self.listener,
              let listener = try? PostgresListener(configuration: configuration, channels: ["iap_jobs"]) else { return nil }
        Task { [wake, logger] in
            for await event in listener.events {
                if event == .behindPooler {
                    logger.warning("listen_behind_pooler", ["action": "polling",
                                                            "hint": "point DATABASE_LISTEN_URL at the server directly, or set it to off"])
                }
                wake.wake()
            }
        }
        return listener
    }

    private func claimLoop() async {
        var wakeups = wake.stream.makeAsyncIterator()
        var brokenSeen = store.client.brokenConnectionCount
        await withDiscardingTaskGroup { group in
            var lingered = false
            while !stopping.load(ordering: .acquiring) {
                // A claim whose reply was lost, or any connection the pool had to drop, may have left
                // jobs leased to this worker id that it does not know of: hand them back with the next claim.
                let broken = store.client.brokenConnectionCount
                if broken != brokenSeen {
                    brokenSeen = broken
                    claims.withLock { $0.handBackDue = true }
                }
                let free = freeSlots()
                let (slots, backlog) = claims.withLock { ($0.slots(verifying: free.verifying, writing: free.writing), $0.backlog) }
                if slots == 0 {
                    lingered = false
                    _ = await wakeups.next()
                    continue
                }
                // Verifications end in bursts (a claim's worth of fast ones): let the burst end, so
                // the next claim is one batch and not its first few jobs in a statement of their own.
                if backlog && slots < configuration.claimBatch && configuration.claimLinger > 0 && !lingered {
                    lingered = true
                    try? await Task.sleep(for: .seconds(configuration.claimLinger))
                    continue
                }
                lingered = false
                let now = freeSlots()
                guard let claim = claims.withLock({ $0.begin(verifying: now.verifying, writing: now.writing) }) else { continue }
                group.addTask { [self] in await run(claim) }
            }
        }
        // Claims begun by a claim (`chainedClaim`) are not the group's: wait for them too.
        while claims.withLock({ $0.running }) > 0 { _ = await wakeups.next() }
    }

    /// One claim, in its own task, and the claims sent after it on its connection: a reply that
    /// came back full may send the next claim the moment it is in (`claimAhead`), so the server runs
    /// that claim while this task decodes, holds and starts the jobs of the one before. Otherwise a
    /// claim that came back full begins the next one itself when a whole batch of slots is free
    /// (`chainedClaim`), or the loop is woken when it came back full (more may wait), failed, or a
    /// hand-back or the shutdown waits for it. A claim that emptied the queue waits for news.
    private func run(_ first: ClaimsInFlight.Claim) async {
        let ahead = AheadClaim()
        var claim = first
        var anyClaimed = false
        var retried = false
        while true {
            do {
                if claim.handingBack {
                    claimed(try await handBackAndClaim(claim), by: claim, nextSent: false)
                    return
                }
                let last = try await store.client.withConnection { connection in
                    var reply = try await store.claim(on: connection, limit: claim.limit, workerID: configuration.workerID,
                                                      leaseSeconds: configuration.leaseSeconds, startingIn: claim.half, cache: payloads,
                                                      next: claimAhead(after: claim, into: ahead))
                    while let sent = reply.ahead, let next = ahead.take() {
                        anyClaimed = true
                        claimed(reply.jobs, by: claim, nextSent: true)
                        claim = next
                        reply = try await store.claimSentAhead(sent, on: connection, workerID: configuration.workerID,
                                                               leaseSeconds: configuration.leaseSeconds, cache: payloads,
                                                               next: claimAhead(after: claim, into: ahead))
                    }
                    return reply.jobs
                }
                // Asked for but not sent (its statement is not prepared on this session yet): no
                // lease is taken under it, so it runs as a claim of its own, in the lane's turn.
                claimed(last, by: claim, nextSent: false, then: ahead.take())
                return
            } catch {
                // A claim sent ahead whose reply will not be read: its leases are handed back later.
                if let sent = ahead.take() { claims.withLock { $0.abandon(sent) } }
                let connectionLost = (error as? PostgresError)?.isConnectionLost ?? false
                // A connection found dead (a server restart) before anything came back: once more, on a new one.
                if connectionLost && !anyClaimed && !retried {
                    retried = true
                    continue
                }
                let backoff = claims.withLock { $0.failed(claim, connectionLost: connectionLost) }
                healthy.store(false, ordering: .relaxed)
                logger.warning("claim_failed", ["error": .error(error)])
                try? await Task.sleep(for: .seconds(backoff))
                claims.withLock { $0.end(claim) }
                wake.wake()
                return
            }
        }
    }

    /// A claim's jobs came back: held and counted as verifying before its turn is given back, so
    /// the next claim sees their slots taken and a hand-back leaves them alone; they start after,
    /// while the next claim is on its way (with slots for it: `concurrency` of three batches or
    /// more). `nextSent`: a claim went out after it on its connection already; `reserved`: one
    /// was reserved to go out that way but was not sent, and starts here instead.
    private func claimed(_ claimed: [ClaimedJob], by claim: ClaimsInFlight.Claim, nextSent: Bool, then reserved: ClaimsInFlight.Claim? = nil) {
        healthy.store(true, ordering: .relaxed)
        let jobs = hold(claimed)
        let free = freeSlots()
        let (handBackWaits, next) = claims.withLock { claims in
            claims.succeeded(claim, claimed: claimed.count)
            return (claims.handBackDue, nextSent ? nil : reserved ?? chainedClaim(&claims, free: free))
        }
        if let next {
            // Sent before this claim's jobs start; it runs here until it waits for its reply.
            Task.immediate { [self] in await run(next) }
        } else if (claimed.count == claim.limit && !nextSent) || handBackWaits || stopping.load(ordering: .acquiring) {
            // More may wait; or a hand-back, or the shutdown, waits for the claims in flight to end.
            wake.wake()
        }
        start(jobs)
    }

    /// Asked on the connection's thread the moment `claim`'s reply is in, with its number of
    /// jobs: how many the claim sent at once after it asks for and the half of the ready set it
    /// starts in, or nil to send none (`ClaimsInFlight.chain`). The claim it reserves waits in
    /// `ahead` for its lane.
    private func claimAhead(after claim: ClaimsInFlight.Claim, into ahead: AheadClaim) -> @Sendable (Int) -> QueueStore.NextClaim? {
        { [self] claimed in
            guard !stopping.load(ordering: .acquiring) else { return nil }
            let free = freeSlots()
            guard let next = claims.withLock({ $0.chain(after: claim, claimed: claimed, verifying: free.verifying, writing: free.writing) })
            else { return nil }
            ahead.put(next)
            return (next.limit, next.half)
        }
    }

    /// The next claim, begun by the claim that just came back rather than by the claim loop, when
    /// it came back full (more jobs wait) and a whole batch of slots is free: the loop's wake-up
    /// and a new task's start, each a thread's wake-up, no longer lie between one claim's reply
    /// and the next claim. Anything else (part batches, lingering, hand-backs, backoff) is the
    /// loop's.
    private func chainedClaim(_ claims: inout ClaimsInFlight, free: (verifying: Int, writing: Int)) -> ClaimsInFlight.Claim? {
        guard claims.backlog, !claims.handBackDue, !stopping.load(ordering: .acquiring),
              claims.slots(verifying: free.verifying, writing: free.writing) == configuration.claimBatch else { return nil }
        return claims.begin(verifying: free.verifying, writing: free.writing)
    }

    /// Verifications that may start now. Results waiting to be written still hold their leases:
    /// they may use up to another `concurrency` of them, so a completer that lags (a slow
    /// database) stops the claims before the leases it cannot write in time pile up.
    private func freeSlots() -> (verifying: Int, writing: Int) {
        let verifying = inflight.load(ordering: .acquiring)
        return (configuration.concurrency - verifying, 2 * configuration.concurrency - held.count)
    }

    /// One claim in the same round trip as handing back every job leased to this worker id that
    /// it does not hold, without spending their attempt.
    private func handBackAndClaim(_ claim: ClaimsInFlight.Claim) async throws -> [ClaimedJob] {
        let result = try await store.claim(limit: claim.limit, workerID: configuration.workerID, leaseSeconds: configuration.leaseSeconds,
                                           handingBackAllBut: held.snapshot, startingIn: claim.half, cache: payloads)
        if result.handedBack > 0 { logger.notice("leases_handed_back", ["jobs": .int(result.handedBack)]) }
        return result.claimed
    }

    /// Holds a claim's jobs, but none this process runs already at the same attempt
    /// (`HeldJobs.hold`), and counts them as verifying; the jobs to start.
    private func hold(_ claimed: [ClaimedJob]) -> [ClaimedJob] {
        let jobs = held.hold(claimed)
        if jobs.count < claimed.count {
            logger.notice("jobs_claimed_again", ["jobs": .int(claimed.count - jobs.count),
                                                 "hint": "an earlier claim of theirs was undone (a crash or failover); each runs once"])
        }
        guard !jobs.isEmpty else { return jobs }
        inflight.add(jobs.count, ordering: .acquiringAndReleasing)
        metrics.inflight.add(Double(jobs.count))
        metrics.claimed.add(Double(jobs.count))
        return jobs
    }

    /// Starts held jobs (`hold`); the bookkeeping is done once per claim.
    private func start(_ jobs: [ClaimedJob]) {
        guard !jobs.isEmpty else { return }
        let deadline = ContinuousClock.now + .seconds(configuration.verifyDeadline)
        let claim = running.withLock { $0.begin(jobs.map(\.id), deadline: deadline) }
        // A taker runs on this task until its first suspension (a request to Apple): no hop to
        // another thread first, which would cost a job as much as the rest of its bookkeeping. When it
        // suspends, or has run out of jobs, its start returns here: the next taker starts with
        // the next job. A handler computing before it awaits yields first (`JobHandler`).
        while let taker = running.withLock({ $0.newTaker(for: claim) }) {
            let task = Task.immediate { [self] in await take(jobs, from: claim, as: taker) }
            running.withLock { $0.attach(task, taker: taker, to: claim) }
        }
    }

    /// Verifies the claim's jobs one after the other, as long as any is left and this task is not
    /// cancelled (by the deadline watchdog or the shutdown, for the job it was running).
    /// The clock is read once per job: a job's end is the next one's start (what lies between is
    /// this taker's bookkeeping, microseconds); two reads were a twentieth of a no-op job's CPU.
    /// Whether the task was cancelled is read once per job, after its verification.
    private func take(_ jobs: [ClaimedJob], from claim: RunningJobs.Claim, as taker: Int) async {
        var started = ContinuousClock.now
        var cancelled = Task.isCancelled
        while !cancelled, let slot = running.withLock({ $0.take(from: claim, by: taker) }) {
            let job = jobs[slot.index]
            logger.debug("job_claimed", ["job_id": .int(job.id), "kind": .string(job.kind), "attempt": .int(job.attempts)])
            (started, cancelled) = await runJob(job, slot, started: started)
        }
    }

    // The verification's frame is allocated for the whole wait on Apple (10,000 jobs in flight hold
    // 10,000 of them), so only the wait is async; what follows runs in a synchronous function.
    private func runJob(_ job: ClaimedJob, _ slot: RunningJobs.Slot,
                        started: ContinuousClock.Instant) async -> (ended: ContinuousClock.Instant, cancelled: Bool) {
        let verification = await verify(job)
        let cancelled = Task.isCancelled
        return (jobVerified(job, slot, verification, interrupted: cancelled, after: started), cancelled)
    }

    /// Returns when the job ended.
    @inline(never)
    private func jobVerified(_ job: ClaimedJob, _ slot: RunningJobs.Slot, _ answer: JobVerdict, interrupted: Bool,
                             after started: ContinuousClock.Instant) -> ContinuousClock.Instant {
        var verification: JobVerdict? = answer
        if interrupted {
            if overdue.withLock({ $0.remove(job.id) != nil }) {
                let limit = Int(configuration.verifyDeadline)
                verification = .decided(.retry("deadline", error: "verification exceeded \(limit) s"))
            } else {
                verification = nil // shutdown: released, not completed
            }
        }
        let ended = ContinuousClock.now
        let elapsed = ended - started
        let milliseconds = Int(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000)
        _ = running.withLock { $0.finish(slot) } // a finished claim's takers are freed here, outside the lock
        if let verification {
            completer.submit(.init(job: job, verification: verification, milliseconds: milliseconds))
        } else {
            cancelled.withLock { $0.append(job) }
        }
        metrics.inflight.dec()
        let running = inflight.subtract(1, ordering: .acquiringAndReleasing).newValue
        // Wake the claimer once enough slots are free for a worthwhile batch (or all are),
        // not on every finished job: that would make many one-job claims.
        let free = configuration.concurrency - running
        let threshold = max(1, min(configuration.claimBatch, configuration.concurrency) / 8)
        if free == threshold || running == 0 { wake.wake() }
        return ended
    }

    /// One watchdog for all jobs (not a timer task per job): a verification must end well
    /// inside the lease, or another worker could take the job while it still runs here.
    private func cancelOverdueJobs() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(250))
            let now = ContinuousClock.now
            // Under the lock a job cannot finish, so its taker is still running it when cancelled
            // (a taker moves to another job only after this one has finished).
            running.withLock { running in
                for (id, task) in running.overdue(at: now) {
                    overdue.withLock { _ = $0.insert(id) }
                    task.cancel()
                }
            }
        }
    }

    /// Waits for in-flight jobs up to the grace deadline, then cancels and releases the rest.
    private func drain() async {
        let deadline = graceDeadline.withLock { $0 } ?? .now
        while inflight.load(ordering: .acquiring) > 0 && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        let remaining = running.withLock { $0.tasks }
        for task in remaining { task.cancel() }
        for task in remaining { await task.value }
        let leftovers = cancelled.withLock { $0 }
        if !leftovers.isEmpty {
            do {
                let released = try await store.release(leftovers.map(\.id), workerID: configuration.workerID)
                held.letGo(leftovers)
                logger.notice("jobs_released", ["jobs": .int(released)])
            } catch {
                logger.warning("release_failed", ["jobs": .int(leftovers.count), "error": .error(error)])
            }
        }
    }
}

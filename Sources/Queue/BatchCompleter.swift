import Foundation
import Observability
import Postgres
import Synchronization

/// Collects verification results and writes them in batches: one transaction per batch
/// (lease check and lock, settlement, one UPDATE for every job), so a slow Apple never
/// holds a database transaction and a busy worker writes thousands of results per statement.
final class BatchCompleter: Sendable {
    struct Item: Sendable, PendingResult {
        let job: ClaimedJob
        let verification: JobVerdict
        let milliseconds: Int

        var settles: Bool { verification.settles }
    }

    private let store: QueueStore
    private let handler: ErasedHandler
    private let configuration: QueueConfiguration
    private let logger: Logger
    private let metrics: QueueMetrics
    private let pending = Mutex(PendingResults<Item>())
    private let closed = Atomic<Bool>(false)
    /// One wake-up stream per completion loop (an AsyncStream allows one waiting consumer).
    private let wakes: [WakeSignal]
    private let nextWake = Atomic<Int>(0)
    /// `iap.complete_done_jobs` was found missing (a database not yet migrated to 0042): every
    /// batch is written by the completion statement from then on.
    private let doneFunctionMissing = Atomic<Bool>(false)
    /// Results accepted but not yet written or abandoned (for graceful shutdown).
    private let outstanding = Atomic<Int>(0)

    /// Told when a batch is written or given up, so the worker stops counting those jobs as its own.
    private let held: HeldJobs

    /// Woken when written results free claim slots.
    private let claimer: WakeSignal

    /// Where a job sent back for a retry leaves its payload for its next claim by this process.
    private let payloads: PayloadCache

    init(store: QueueStore, handler: ErasedHandler, configuration: QueueConfiguration, logger: Logger, metrics: QueueMetrics, loops: Int,
         held: HeldJobs, claimer: WakeSignal, payloads: PayloadCache = PayloadCache()) {
        self.held = held
        self.payloads = payloads
        self.claimer = claimer
        self.store = store
        self.handler = handler
        self.configuration = configuration
        self.logger = logger
        self.metrics = metrics
        wakes = (0..<max(1, loops)).map { _ in WakeSignal() }
    }

    var outstandingCount: Int { outstanding.load(ordering: .relaxed) }

    func submit(_ item: Item) {
        outstanding.add(1, ordering: .relaxed)
        let due = pending.withLock { pending in
            pending.append(item)
            return pending.due(limit: configuration.completionBatch)
        }
        if due { wakeOne() }
    }

    /// No more submissions: `run` returns once everything pending is written (or abandoned
    /// after `deadline`; leases then cover those jobs).
    func close() {
        closed.store(true, ordering: .releasing)
        wakes.forEach { $0.finish() } // every completion loop sees the end
    }

    /// Round-robin, so idle loops share the work.
    private func wakeOne() {
        let index = nextWake.add(1, ordering: .relaxed).oldValue
        wakes[index % wakes.count].wake()
    }

    /// Completion loop number `loop`; several run at once, sharing the pending results.
    func run(loop: Int, abandonAfter deadline: @escaping @Sendable () -> ContinuousClock.Instant?) async {
        var iterator = wakes[loop % wakes.count].stream.makeAsyncIterator()
        while true {
            let (first, linger) = pending.withLock { $0.take(upTo: configuration.completionBatch, linger: configuration.completionLinger > 0) }
            var batch = first
            if linger {
                // Results come in bursts (a claim's worth of jobs finishing together): let the
                // burst gather into one write instead of writing its first few on their own.
                try? await Task.sleep(for: .seconds(configuration.completionLinger))
                batch = pending.withLock { $0.takeAfterLingering(upTo: configuration.completionBatch) }
            }
            if batch.isEmpty {
                if closed.load(ordering: .acquiring) { return }
                _ = await iterator.next()
                continue
            }
            // A full batch more is waiting: let another loop start on it now.
            if pending.withLock({ $0.items.count >= configuration.completionBatch }) { wakeOne() }
            await writeWithRetry(batch, deadline: deadline)
            held.letGo(batch.lazy.map(\.job))
            claimer.wake()
            outstanding.subtract(batch.count, ordering: .relaxed)
            pending.withLock { $0.finished() }
        }
    }

    private func writeWithRetry(_ batch: [Item], deadline: @Sendable () -> ContinuousClock.Instant?) async {
        var backoff = 0.05
        while true {
            do {
                try await write(batch, deadline: deadline)
                return
            } catch let error as PostgresError where error.isTransient {
                if let deadline = deadline(), ContinuousClock.now >= deadline {
                    logger.warning("completion_abandoned", ["jobs": .int(batch.count), "error": .string(error.message)])
                    return
                }
                logger.warning("completion_retry", ["jobs": .int(batch.count), "error": .string(error.message)])
                try? await Task.sleep(for: .seconds(backoff))
                backoff = min(backoff * 2, 2)
            } catch {
                // A settlement error in one job must not block the others: write them one by one.
                if batch.count > 1 {
                    for item in batch { await writeWithRetry([item], deadline: deadline) }
                    return
                }
                logger.error("completion_failed", ["job_id": .int(batch[0].job.id), "error": .error(error)])
                let fallback = Item(job: batch[0].job, verification: .decided(.retry("settlement_error", error: "\(error)")),
                                    milliseconds: batch[0].milliseconds)
                if case .settle = batch[0].verification {
                    try? await write([fallback], deadline: deadline)
                }
                return
            }
        }
    }

    /// The runs of the batch's results that settle in the completion's transaction.
    private static func settledRuns(_ batch: [Item]) -> [JobRun] {
        batch.compactMap { item -> JobRun? in
            if case .settle = item.verification { return item.job.run }
            return nil
        }
    }

    private func write(_ batch: [Item], deadline: @Sendable () -> ContinuousClock.Instant?) async throws {
        let settled = Self.settledRuns(batch)
        let witness = UUID()
        let started = ContinuousClock.now
        let epoch = store.client.sessionsOpened
        var written: WrittenBatch
        do {
            written = try await transaction(batch, witness: witness)
        } catch let ambiguous as AmbiguousCommit {
            // The COMMIT went out and its reply was lost: what happened decides what is announced.
            switch await resolve(witness, ambiguous, since: started, deadline: deadline) {
            case .committed(let lostIDs)?:
                let writtenIDs = lostIDs.isEmpty ? nil : Set(ambiguous.rows.map(\.id)).subtracting(lostIDs)
                logger.notice("commit_resolved", ["outcome": "committed", "jobs": .int(writtenIDs?.count ?? ambiguous.rows.count),
                                                  "error": .string(ambiguous.underlying.message)])
                written = WrittenBatch(rows: ambiguous.rows, items: ambiguous.items, ids: writtenIDs, fenced: ambiguous.fenced)
            case .rolledBack?:
                logger.notice("commit_resolved", ["outcome": "rolled_back", "jobs": .int(batch.count),
                                                  "error": .string(ambiguous.underlying.message)])
                if !settled.isEmpty { handler.didRollBack(settled) }
                throw ambiguous.underlying // retried like any lost connection
            case nil:
                // Shutting down and the database still unreachable: the leases bring the jobs
                // back, and an alert that did commit is emitted again by the alert re-emitter.
                logger.error("commit_unresolved", ["jobs": .int(batch.count), "error": .string(ambiguous.underlying.message)])
                if !settled.isEmpty { handler.didRollBack(settled) }
                return
            }
        } catch {
            if !settled.isEmpty { handler.didRollBack(settled) }
            throw error
        }
        if !settled.isEmpty { handler.didCommit(settled) }
        written.epoch = epoch
        report(written)
    }

    /// Asks a fresh session until the witness answers (a failover may take a while); nil only
    /// when shutdown's deadline passes first. Past half the witnesses' retention the witness may
    /// be gone, and the jobs' own state answers instead.
    private func resolve(_ witness: UUID, _ ambiguous: AmbiguousCommit, since started: ContinuousClock.Instant,
                         deadline: @Sendable () -> ContinuousClock.Instant?) async -> CommitResolution? {
        var backoff = 0.1
        while true {
            do {
                if ContinuousClock.now - started > .seconds(configuration.witnessRetention / 2) {
                    return try await store.resolveCommitByJobState(ambiguous.rows, attempts: ambiguous.items.map(\.job.attempts))
                }
                return try await store.resolveCommit(witness: witness)
            } catch {
                if let deadline = deadline(), ContinuousClock.now >= deadline { return nil }
                logger.warning("commit_resolution_retry", ["jobs": .int(ambiguous.rows.count), "error": .error(error)])
                try? await Task.sleep(for: .seconds(backoff))
                backoff = min(backoff * 2, 2)
            }
        }
    }

    /// What a completion transaction wrote: its rows and, in the same order, the results they
    /// came from; the ids written (lease still held; nil: every row); and `fenced`: settle items
    /// whose lease another worker holds by now (never settled here).
    private struct WrittenBatch: Sendable {
        let rows: [CompletionRow]
        let items: [Item]
        let ids: Set<Int>?
        let fenced: [Item]
        /// The pool's session epoch before the transaction: what a retried job's cached payload
        /// is good for (`PayloadCache`).
        var epoch = 0
    }

    /// The completion transaction's COMMIT was sent and no reply came: it may have committed.
    private struct AmbiguousCommit: Error {
        let rows: [CompletionRow]
        let items: [Item]
        let fenced: [Item]
        let underlying: PostgresError
    }

    /// A batch of `done` results that `iap.complete_done_jobs` did not write: a lease of it was
    /// lost since the claim, or the function is missing. Nothing of it committed.
    private struct DoneBatchRefused: Error {}

    /// A batch of `done` results is written by `doneCompletionStatement`; if a lease of it was
    /// lost, it is written again by the statement that names the jobs it could not write.
    private func transaction(_ batch: [Item], witness: UUID) async throws -> WrittenBatch {
        do {
            return try await transaction(batch, witness: witness, doneAlone: !doneFunctionMissing.load(ordering: .relaxed))
        } catch is DoneBatchRefused {
            let settled = Self.settledRuns(batch)
            if !settled.isEmpty { handler.didRollBack(settled) }
            return try await transaction(batch, witness: witness, doneAlone: false)
        }
    }

    private func transaction(_ batch: [Item], witness: UUID, doneAlone: Bool) async throws -> WrittenBatch {
        let committed: (rows: [CompletionRow], items: [Item], fenced: [Item], reply: PostgresRows?) = try await store.client.withConnection { connection in
            // Fixed-shape statements by key, thousands of times: planned once per session.
            try await connection.transaction(planning: .reused) { connection in
                // A job claimed before the pool opened its newest session may have lost its id to
                // another job (a failover that lost commits): such a result is written only if its
                // id still names the job it verified. Otherwise it is fenced, like a lost lease.
                let epoch = store.client.sessionsOpened
                let unsure = batch.lazy.map(\.job).filter { $0.sessionEpoch != epoch }
                let others = unsure.isEmpty ? [] : try await store.namingOthers(Array(unsure), on: connection)
                // A run whose job was rescued and claimed here again is fenced too: the later run's
                // result is the job's (`HeldJobs.superseded(among:)`).
                let superseded = held.superseded(among: batch.lazy.map(\.job))
                let isFenced = { (item: Item) in others.contains(item.job.id) || superseded.contains(item.job.run) }
                let clear = others.isEmpty && superseded.isEmpty
                let mine = clear ? batch : batch.filter { !isFenced($0) }
                // Rows of the decided results first, then of the settled ones; `items` in the same order.
                var rows: [CompletionRow] = []
                var toSettle: [(item: Item, work: any Sendable)] = []
                var fenced: [Item] = clear ? [] : batch.filter(isFenced)
                rows.reserveCapacity(mine.count)
                for item in mine {
                    switch item.verification {
                    case .decided(let outcome): rows.append(completionRow(job: item.job, outcome: outcome))
                    case .settle(let work): toSettle.append((item, work))
                    }
                }
                var items = mine // a batch of decided results alone (the most common) is not copied
                var writes: [PostgresStatement] = []
                if !toSettle.isEmpty {
                    items.removeAll { $0.settles }
                    let owned = try await store.lockOwned(toSettle.map(\.item.job.id), workerID: configuration.workerID, on: connection)
                    let stillLeased = toSettle.filter { owned.contains($0.item.job.id) }
                    fenced += toSettle.filter { !owned.contains($0.item.job.id) }.map(\.item)
                    let settled = try await handler.settle(stillLeased.map { ($0.item.job, $0.work) }, connection)
                    precondition(settled.outcomes.count == stillLeased.count, "settle must return one outcome per item")
                    rows += zip(stillLeased, settled.outcomes).map { completionRow(job: $0.item.job, outcome: $1) }
                    items += stillLeased.map(\.item)
                    writes = settled.writes
                }
                // The settlement's writes, the jobs' completion (with its witness), the lease rows of
                // claims let go of entirely (lost if this rolls back: the rescuer deletes them when
                // they expire) and COMMIT: one round trip.
                let done = doneAlone ? store.doneCompletionStatement(rows, attempts: items.map(\.job.attempts), rowVersions: items.map(\.job.rowVersion),
                                                                    workerID: configuration.workerID, witness: witness) : nil
                let completion = done ?? store.completionStatement(rows, workerID: configuration.workerID, witness: witness)
                let drops = store.dropLeasesStatement(held.takeDroppableLeases(sessionsOpened: store.client.sessionsOpened))
                let results: [PostgresRows]
                do {
                    results = try await connection.commit(after: writes + [completion, drops].compactMap { $0 })
                } catch let error as PostgresError where done != nil && error.sqlState == QueueStore.leaseLostState {
                    throw DoneBatchRefused()
                } catch let error as PostgresError where done != nil && QueueStore.isDoneFunctionMissing(error) {
                    if !doneFunctionMissing.exchange(true, ordering: .relaxed) {
                        logger.warning("completion_function_missing", ["hint": "run receipt-worker migrate (migration 0042)"])
                    }
                    throw DoneBatchRefused()
                } catch let error as PostgresError where error.isConnectionLost && completion != nil {
                    throw AmbiguousCommit(rows: rows, items: items, fenced: fenced, underlying: error)
                }
                return (rows, items, fenced, completion == nil || results.count <= writes.count ? nil : results[writes.count])
            }
        }
        // The completion names the jobs of the batch it did not write (their lease was lost). A
        // reply that cannot be read comes after COMMIT: the witness says what was written.
        guard let reply = committed.reply else { return WrittenBatch(rows: committed.rows, items: committed.items, ids: [], fenced: committed.fenced) }
        let lost: [Int]
        do {
            lost = try QueueStore.written(reply).lost
        } catch {
            throw AmbiguousCommit(rows: committed.rows, items: committed.items, fenced: committed.fenced,
                                  underlying: PostgresError(kind: .client, message: "committed, but its reply could not be read: \(error)"))
        }
        return WrittenBatch(rows: committed.rows, items: committed.items, ids: lost.isEmpty ? nil : Set(committed.rows.map(\.id)).subtracting(lost),
                            fenced: committed.fenced)
    }

    private func completionRow(job: ClaimedJob, outcome: JobOutcome) -> CompletionRow {
        switch outcome.disposition {
        case .finish(let state, let name):
            return CompletionRow(id: job.id, state: state.rawValue, outcome: name, delaySeconds: nil,
                                 appleStatus: outcome.appleStatus, error: outcome.error, transactionIDs: outcome.transactionIDs)
        case .retry(let reason, let notBefore):
            if job.attempts >= configuration.maxAttempts {
                return CompletionRow(id: job.id, state: "timed_out", outcome: nil, delaySeconds: nil,
                                     appleStatus: outcome.appleStatus, error: outcome.error ?? reason, transactionIDs: [],
                                     retryReason: reason)
            }
            var delay = configuration.retryPolicy.delay(afterAttempt: job.attempts)
            if let notBefore { delay = max(delay, Double(notBefore.components.seconds) + Double(notBefore.components.attoseconds) / 1e18) }
            return CompletionRow(id: job.id, state: "retrying", outcome: nil, delaySeconds: delay,
                                 appleStatus: outcome.appleStatus, error: outcome.error ?? reason, transactionIDs: [],
                                 retryReason: reason)
        }
    }

    /// The same string for the same finish on any primary: Apple's transaction ids where the job
    /// has them (job ids are not stable across a failover that lost commits).
    static func announcementKey(_ outcome: String, _ row: CompletionRow) -> String {
        switch row.transactionIDs.count {
        case 0: "\(outcome):job:\(row.id)"
        case 1: "\(outcome):\(row.transactionIDs[0])"
        default: "\(outcome):" + row.transactionIDs.sorted().joined(separator: ",")
        }
    }

    /// Logs and counts what was written; a job not written (or not settled) had lost its lease.
    /// The batch's lines reach the log together, in one write.
    private func report(_ written: WrittenBatch) {
        logger.batch { logger in
            for item in written.fenced {
                logger.warning("lease_lost", ["job_id": .int(item.job.id), "attempt": .int(item.job.attempts)])
            }
            // Finished jobs are counted per run of equal outcomes: a batch is mostly one outcome.
            var finishedOutcome = ""
            var finishedRun = 0
            // By index: a row and its result are read field by field, not copied whole (a copy
            // retains each of their strings and arrays), since a job finished `done` needs only
            // its outcome unless `job_finished` is logged.
            let rows = written.rows, items = written.items
            for index in rows.indices {
                if let ids = written.ids, !ids.contains(rows[index].id) {
                    logger.warning("lease_lost", ["job_id": .int(rows[index].id), "attempt": .int(items[index].job.attempts)])
                    continue
                }
                switch rows[index].state {
                case "retrying":
                    let (row, item) = (rows[index], items[index])
                    payloads.remember(row.id, payload: item.job.payload, epoch: written.epoch)
                    let reason = row.retryReason ?? "unknown"
                    metrics.retries.labels(reason).inc()
                    logger.info("job_retry", ["job_id": .int(row.id), "attempt": .int(item.job.attempts), "reason": .string(reason),
                                              "delay_s": .double(((row.delaySeconds ?? 0) * 1000).rounded() / 1000), "apple_status": row.appleStatus.map { .int($0) } ?? "",
                                              "ms": .int(item.milliseconds)])
                case "timed_out":
                    let (row, item) = (rows[index], items[index])
                    metrics.retries.labels(row.retryReason ?? "unknown").inc()
                    logger.warning("job_timed_out", ["job_id": .int(row.id), "attempts": .int(item.job.attempts),
                                                     "reason": .string(row.retryReason ?? "unknown"),
                                                     "error": .string(row.error ?? ""), "apple_status": row.appleStatus.map { .int($0) } ?? ""])
                default:
                    let outcome = rows[index].outcome ?? rows[index].state
                    if outcome != finishedOutcome {
                        if finishedRun > 0 { metrics.finished.labels(finishedOutcome).add(Double(finishedRun)) }
                        (finishedOutcome, finishedRun) = (outcome, 0)
                    }
                    finishedRun += 1
                    logger.info("job_finished", ["job_id": .int(rows[index].id), "announcement_key": .string(Self.announcementKey(outcome, rows[index])),
                                                 "kind": .string(items[index].job.kind), "outcome": .string(outcome),
                                                 "transaction_id": .string(rows[index].transactionIDs.joined(separator: ",")),
                                                 "attempt": .int(items[index].job.attempts), "ms": .int(items[index].milliseconds)])
                }
            }
            if finishedRun > 0 { metrics.finished.labels(finishedOutcome).add(Double(finishedRun)) }
        }
    }
}

import EmbeddedPostgres
import Foundation
import HTTP
import Observability
import Postgres
import Queue
import Synchronization

/// `bench queue`: River-style burn-down of no-op jobs, plus the raw-SQL ceiling measured
/// in the same run, NOTIFY latency with idle workers, and the cost of an idle worker.
public struct QueueBenchmark: Sendable {
    let context: BenchContext

    public init(context: BenchContext) { self.context = context }

    static let emptyQueueSQL = "TRUNCATE iap.job_queue, iap.job_requests, iap.job_ready, iap.job_parked, iap.job_flagged, iap.job_leases"

    public func run() async throws -> Int32 {
        let jobs = context.number("jobs", default: 100_000)
        // Four claim batches: every full claim's reply sends the lane's next claim before it is
        // decoded (`ClaimsInFlight.chain`); with three, about nine in ten do; with two, the next
        // claim waits for the last one's jobs to start.
        let concurrency = context.number("concurrency", default: 4_000)
        let claimBatch = context.number("claim-batch", default: 1_000)
        let processes = context.number("processes", default: 4)
        return try await context.withDatabase { url, cluster in
            let client = PostgresClient(conninfo: url, maxConnections: 6, applicationName: "receipt-worker-bench")
            try await context.migrate(client)
            _ = try await client.query(Self.emptyQueueSQL)
            BenchReport.line("queue", "setup", ["database": cluster == nil ? "DATABASE_URL" : "private cluster (fsync=off)", "cores": "\(ProcessInfo.processInfo.activeProcessorCount)"])

            // The worker's pool lives across the rounds, as a running worker's sessions do, and has
            // drained a queue before the first: a session's first claims and completions load the
            // catalog, plan the statements and map the shared buffers the queue's pages sit in,
            // which a worker pays once, not per drain. The yardstick runs on this client's sessions,
            // warm from the loads and every phase before it.
            let direct = PostgresConfiguration(conninfo: url, applicationName: "receipt-worker-bench-worker")
            let workerClient = try await freshPool(direct)
            try await warmUp(workerClient, checkedBy: client, listenURL: url, concurrency: concurrency, claimBatch: claimBatch)

            let enqueueRate = try await enqueue(client, count: jobs, tag: "a")
            BenchReport.line("queue", "enqueue", ["enqueue_jobs_per_s": BenchReport.figure(enqueueRate), "jobs": "\(jobs)", "via": "COPY+INSERT..SELECT"])

            // Rounds, each a drain then the lean ceiling: this machine's speed drifts between
            // minutes, so a ratio is taken within a round and the median of the rounds reported.
            let statistics = StatementStatistics(client: client)
            let activity = TableActivity(client: client, table: "iap.job_queue")
            let server = await DatabaseServerCPU.locate(client)
            var rounds: [(drain: Double, lean: Double, sameWork: Double, plain: Double, drainCPU: CPUPerJob, leanCPU: CPUPerJob,
                          plainCPU: CPUPerJob)] = []
            var cost = TableActivity.Delta()
            let counting = await statistics.reset() // the drains' statements, every round (the lean ones are labelled apart)
            for round in 0..<context.number("rounds", default: 3) {
                // Each round drains a queue of its own jobs only, as the yardstick drains a table made for
                // the round: the earlier rounds' finished jobs would make the drain's tables and indexes
                // the larger.
                if round > 0 {
                    _ = try await client.query(Self.emptyQueueSQL)
                    _ = try await enqueue(client, count: jobs, tag: "a\(round)")
                }
                let before = try await activity.read()
                let (drain, drainCPU) = try await drainInProcess(client, worker: workerClient, listenURL: url, jobs: jobs, concurrency: concurrency,
                                                                 claimBatch: claimBatch, server: server)
                cost.add(before, try await activity.read())
                // The drain's dead row versions vacuumed now, outside both timings: left to autovacuum,
                // its worker would run during whichever phase comes next, the lean ceiling or the next drain.
                _ = try await client.query("VACUUM ANALYZE iap.job_queue, iap.job_requests, iap.job_ready, iap.job_leases")
                let (lean, leanCPU) = try await LeanQueueCeiling(client: client, batch: claimBatch, server: server).measureWithCPU(jobs: jobs)
                // The lean table doing our duties, in the same minute (its ratio is meaningless across minutes).
                let sameWork = try await LeanQueueCeiling(client: client, batch: claimBatch, shape: .sameWork).measure(jobs: jobs)
                // The yardstick: our own design (state beside the table) in plain SQL and nothing else.
                let (plain, plainCPU) = try await LeanQueueCeiling(client: client, batch: claimBatch, shape: .stateBeside, server: server)
                    .measureWithCPU(jobs: jobs)
                rounds.append((drain, lean, sameWork, plain, drainCPU, leanCPU, plainCPU))
                BenchReport.line("queue", "round", [("round", "\(round + 1)"), ("drain_jobs_per_s", BenchReport.figure(drain)),
                                 ("lean_ceiling_jobs_per_s", BenchReport.figure(lean)), ("drain_to_lean_ceiling_ratio", String(format: "%.2f", drain / lean)),
                                 ("lean_same_work_jobs_per_s", BenchReport.figure(sameWork)), ("drain_to_lean_same_work_ratio", String(format: "%.2f", drain / sameWork)),
                                 ("plain_sql_jobs_per_s", BenchReport.figure(plain)), ("drain_to_plain_sql_ratio", String(format: "%.2f", drain / plain))]
                                 + cpuFields(drain: drainCPU, lean: leanCPU)
                                 + (plainCPU.database.map { [("plain_sql_db_cpu_us_per_job", BenchReport.figure($0))] } ?? [])
                                 + [("plain_sql_client_cpu_us_per_job", BenchReport.figure(plainCPU.process))]
                                 + busyFields(drain: [drainCPU], plain: [plainCPU]))
            }
            let drain = BenchReport.median(rounds.map(\.drain))
            let lean = BenchReport.median(rounds.map(\.lean))
            let plainDatabase = rounds.compactMap(\.plainCPU.database), drainDatabase = rounds.compactMap(\.drainCPU.database)
            BenchReport.line("queue", "plain_sql_yardstick", [
                ("plain_sql_jobs_per_s", BenchReport.figure(BenchReport.median(rounds.map(\.plain)))),
                ("drain_to_plain_sql_ratio", String(format: "%.2f", BenchReport.median(rounds.map { $0.drain / $0.plain }))),
                ("worker_cpu_us_per_job", BenchReport.figure(BenchReport.median(rounds.map(\.drainCPU.process)))),
                ("plain_sql_client_cpu_us_per_job", BenchReport.figure(BenchReport.median(rounds.map(\.plainCPU.process))))]
                + (plainDatabase.isEmpty || drainDatabase.isEmpty ? [] : [
                    ("plain_sql_db_cpu_us_per_job", BenchReport.figure(BenchReport.median(plainDatabase))),
                    ("drain_db_cpu_us_per_job", BenchReport.figure(BenchReport.median(drainDatabase)))])
                + busyFields(drain: rounds.map(\.drainCPU), plain: rounds.map(\.plainCPU)))
            BenchReport.line("queue", "drain", ["drain_jobs_per_s": BenchReport.figure(drain), "processes": "1", "concurrency": "\(concurrency)",
                             "claim_batch": "\(claimBatch)", "rounds": "\(rounds.count)", "peak_rss_mb": BenchReport.figure(ResourceUsage.peakRSSMiB())])
            // Ours and the lean table's cost in database CPU alone, the bound of a fleet whose workers run
            // on other machines (here they share the database's cores).
            let databaseRatios = rounds.compactMap { round in round.leanCPU.database.flatMap { lean in round.drainCPU.database.map { lean / $0 } } }
            if !databaseRatios.isEmpty {
                BenchReport.line("queue", "database_cpu", [
                    ("drain_db_cpu_us_per_job", BenchReport.figure(BenchReport.median(rounds.compactMap(\.drainCPU.database)))),
                    ("lean_db_cpu_us_per_job", BenchReport.figure(BenchReport.median(rounds.compactMap(\.leanCPU.database)))),
                    ("lean_to_drain_db_cpu_ratio", String(format: "%.2f", BenchReport.median(databaseRatios))),
                    ("worker_cpu_us_per_job", BenchReport.figure(BenchReport.median(rounds.map(\.drainCPU.process))))])
            }
            BenchReport.line("queue", "drain_cost", cost.fields(jobs: jobs * rounds.count)
                             + (counting ? await statementCost(statistics, claim: "claim", completion: "completion")
                                         : [("statement_times", "unavailable (pg_stat_statements not loaded)")]))
            await workerClient.close()
            if context.decimals["yardstick"] != nil {
                await client.close()
                return 0
            }

            _ = try await enqueue(client, count: jobs, tag: "b")
            _ = await statistics.reset()
            // Our statements without the worker: what they cost the database when driven one lane after the other.
            let (ceiling, ceilingCPU) = try await CPUPerJob.measure(jobs: jobs, server: server) { try await rawSQLCeiling(client, jobs: jobs, batch: claimBatch) }
            BenchReport.line("queue", "raw_sql", [("raw_sql_ceiling_jobs_per_s", BenchReport.figure(ceiling)), ("drain_to_ceiling_ratio", String(format: "%.2f", drain / ceiling))]
                             + (await statementCost(statistics, claim: "claim", completion: "completion"))
                             + (ceilingCPU.database.map { [("raw_sql_db_cpu_us_per_job", BenchReport.figure($0))] } ?? []))
            _ = await statistics.reset()
            let leanOnce = try await LeanQueueCeiling(client: client, batch: claimBatch).measure(jobs: jobs)
            BenchReport.line("queue", "lean_ceiling", [("lean_ceiling_jobs_per_s", BenchReport.figure(lean)),
                             ("drain_to_lean_ceiling_ratio", String(format: "%.2f", BenchReport.median(rounds.map { $0.drain / $0.lean }))),
                             ("lean_ceiling_beside_raw_sql_jobs_per_s", BenchReport.figure(leanOnce)),
                             ("raw_sql_to_lean_ceiling_ratio", String(format: "%.2f", ceiling / leanOnce))]
                             + (await statementCost(statistics, claim: "lean-claim", completion: "lean-completion")))
            BenchReport.line("queue", "lean_same_work_ceiling", [("lean_same_work_jobs_per_s", BenchReport.figure(BenchReport.median(rounds.map(\.sameWork)))),
                             ("drain_to_lean_same_work_ratio", String(format: "%.2f", BenchReport.median(rounds.map { $0.drain / $0.sameWork }))),
                             ("lean_same_work_to_lean_ceiling_ratio", String(format: "%.2f", BenchReport.median(rounds.map { $0.sameWork / $0.lean })))])

            // What unnamed statements (the only kind a transaction pooler allows) cost the hot path.
            _ = try await enqueue(client, count: jobs, tag: "u")
            var unnamed = PostgresConfiguration(conninfo: url, applicationName: "receipt-worker-bench-worker")
            unnamed.preparedStatements = .off
            let (unnamedDrain, _) = try await drainInProcess(client, worker: try await freshPool(unnamed), listenURL: url, jobs: jobs,
                                                             concurrency: concurrency, claimBatch: claimBatch, closing: true)
            BenchReport.line("queue", "drain_unnamed_statements", ["drain_jobs_per_s": BenchReport.figure(unnamedDrain),
                             "drain_to_ceiling_ratio": String(format: "%.2f", unnamedDrain / ceiling),
                             "vs_prepared": String(format: "%.2f", unnamedDrain / drain)])
            if let cluster {
                let bouncer = try await PrivatePgBouncer.start(inFrontOf: cluster, poolMode: .transaction, poolSize: 8)
                defer { bouncer.stop() }
                _ = try await enqueue(client, count: jobs, tag: "p")
                let pooled = PostgresConfiguration(conninfo: bouncer.url(replacingIn: url), applicationName: "receipt-worker-bench-worker")
                let (pooledDrain, _) = try await drainInProcess(client, worker: try await freshPool(pooled), listenURL: url, jobs: jobs,
                                                                concurrency: concurrency, claimBatch: claimBatch, closing: true)
                BenchReport.line("queue", "drain_pgbouncer", ["drain_jobs_per_s": BenchReport.figure(pooledDrain),
                                 "drain_to_ceiling_ratio": String(format: "%.2f", pooledDrain / ceiling),
                                 "pool_mode": "transaction", "listen": "direct"])
            }

            _ = try await enqueue(client, count: jobs, tag: "c")
            let multi = try await drainWithProcesses(client, url: url, jobs: jobs, processes: processes,
                                                     concurrency: concurrency, claimBatch: claimBatch)
            BenchReport.line("queue", "drain", ["drain_jobs_per_s": BenchReport.figure(multi), "processes": "\(processes)"])

            let latency = try await notifyLatency(client, url: url)
            BenchReport.line("queue", "latency", ["enqueue_to_claim_p50_ms": BenchReport.figure(latency.p50), "p99_ms": BenchReport.figure(latency.p99), "samples": "\(latency.samples)"])

            let idle = try await idleCost(client, url: url)
            BenchReport.line("queue", "idle", ["idle_cpu_percent": String(format: "%.2f", idle.cpuPercent),
                            "idle_claim_queries_per_s": String(format: "%.2f", idle.claimsPerSecond), "poll_interval_s": "1"])
            await client.close()
            return 0
        }
    }



    /// The machine's busy share during the drain and during the yardstick (the median of the rounds
    /// given): how much of the ratio is CPU per job and how much cores left waiting.
    private func busyFields(drain: [CPUPerJob], plain: [CPUPerJob]) -> [(String, String)] {
        let drainBusy = drain.compactMap(\.machineBusy), plainBusy = plain.compactMap(\.machineBusy)
        guard !drainBusy.isEmpty, !plainBusy.isEmpty else { return [] }
        return [("drain_machine_busy", String(format: "%.2f", BenchReport.median(drainBusy))),
                ("plain_sql_machine_busy", String(format: "%.2f", BenchReport.median(plainBusy)))]
    }

    /// A round's CPU per job: the worker's (this process) and the lean ceiling's client's, and the
    /// database server's for each when it runs on this machine.
    private func cpuFields(drain: CPUPerJob, lean: CPUPerJob) -> [(String, String)] {
        var fields = [("worker_cpu_us_per_job", BenchReport.figure(drain.process)), ("lean_client_cpu_us_per_job", BenchReport.figure(lean.process))]
        if let drainDatabase = drain.database, let leanDatabase = lean.database {
            fields += [("drain_db_cpu_us_per_job", BenchReport.figure(drainDatabase)), ("lean_db_cpu_us_per_job", BenchReport.figure(leanDatabase))]
        }
        return fields
    }

    /// Server time per job of a phase's claim and completion statements (empty without pg_stat_statements):
    /// the jobs are the rows the claims returned (a completion returns one row per batch).
    private func statementCost(_ statistics: StatementStatistics, claim: String, completion: String) async -> [(String, String)] {
        guard let claimed = await statistics.time(claim), claimed.rows > 0, let completed = await statistics.time(completion) else { return [] }
        return [("claim_us_per_job", String(format: "%.1f", claimed.milliseconds / claimed.rows * 1000)),
                ("completion_us_per_job", String(format: "%.1f", completed.milliseconds / claimed.rows * 1000))]
    }

    /// Loads `count` no-op jobs the way bulk ingest does: COPY into a staging table, then one INSERT .. SELECT.
    private func enqueue(_ client: PostgresClient, count: Int, tag: String) async throws -> Double {
        let rows: [[String?]] = (0..<count).map { ["bench-user-\($0 % 1000)", "bench-\(tag)-\($0)", "bm9vcA=="] }
        let started = ContinuousClock.now
        try await client.withConnection { connection in
            try await connection.transaction { tx in
                _ = try await tx.query("CREATE TEMP TABLE bench_staging (user_id text, order_id text, payload text) ON COMMIT DROP")
                try await tx.copyIn("COPY bench_staging FROM STDIN", rows: rows)
                _ = try await tx.query("""
                    WITH requests AS (
                        INSERT INTO iap.job_requests (id, kind, user_id, order_id, payload, dedup_key)
                        SELECT nextval('iap.jobs_id_seq'), 'receipt', user_id, order_id, payload,
                               iap.job_dedup_key('receipt', user_id, order_id, payload)
                        FROM bench_staging ON CONFLICT (dedup_key) DO NOTHING
                        RETURNING id, kind
                    ), queued AS (
                        INSERT INTO iap.job_queue (id, kind) SELECT id, kind FROM requests RETURNING id, state, run_at
                    )
                    INSERT INTO iap.job_ready (id, state, run_at) SELECT id, state, run_at FROM queued
                    """)
            }
        }
        let seconds = (ContinuousClock.now - started).seconds
        _ = try await client.query(QueueProbe.vacuumJobTablesSQL)
        return Double(count) / seconds
    }

    /// Returns whether it had to wait (the database still had unfinished jobs on its first look).
    @discardableResult
    private func waitUntilDrained(_ client: PostgresClient) async throws -> Bool {
        var waited = false
        while try await client.query(QueueProbe.unfinishedSQL)[0].decode(Bool.self, at: 0) {
            waited = true
            try await Task.sleep(for: .milliseconds(20))
        }
        return waited
    }

    private func quietLogger() -> Logger { Logger(minimumLevel: .warning, sink: StandardOutputSink()) }

    /// One in-process worker on the pool `worker`: jobs per second, and the CPU per job of this
    /// process and of `server` (from the worker's start to, when a server is read, a second after
    /// it stopped, so that the counters of sessions it closed have landed). With `closing`, the
    /// pool is closed when the worker has stopped.
    private func drainInProcess(_ client: PostgresClient, worker workerClient: PostgresClient, listenURL: String, jobs: Int,
                                concurrency: Int, claimBatch: Int, server: DatabaseServerCPU? = nil,
                                closing: Bool = false) async throws -> (Double, CPUPerJob) {
        var configuration = QueueConfiguration()
        configuration.concurrency = concurrency
        configuration.claimBatch = claimBatch
        var (drained, cpu) = try await CPUPerJob.measure(jobs: jobs, server: server) {
            let drained = try await drain(workerClient, jobs: jobs, configuration: configuration, listenURL: listenURL, checkedBy: client)
            if closing { await workerClient.close() }
            if server != nil { try await Task.sleep(for: .milliseconds(1_100)) } // the worker's sessions are closed; let their counters land
            return drained
        }
        cpu.machineBusy = drained.machineBusy // over the drain alone, not the wait after it
        // Sessions kept open send their table statistics (`drain_cost`'s updates) at most every
        // second, and when idle only ten seconds later: asked to now (PostgreSQL 15 and later).
        if !closing { try? await onEverySession(workerClient, "SELECT pg_stat_force_next_flush(), pg_sleep(0.02)") }
        return (drained.jobsPerSecond, cpu)
    }

    /// A pool of the default size with every session open, as a worker that is already running
    /// has them; opened by the worker, its first claim came back 28–97 ms after its start, in
    /// drains of 1.0–1.3 s.
    private func freshPool(_ database: PostgresConfiguration) async throws -> PostgresClient {
        let pool = PostgresClient(configuration: database, maxConnections: context.databasePoolSize)
        try await onEverySession(pool)
        return pool
    }

    /// `workerClient`'s sessions used by an unmeasured drain, then the queue emptied.
    private func warmUp(_ workerClient: PostgresClient, checkedBy client: PostgresClient, listenURL: String, concurrency: Int,
                        claimBatch: Int) async throws {
        let jobs = 20_000
        _ = try await enqueue(client, count: jobs, tag: "warm")
        _ = try await drainInProcess(client, worker: workerClient, listenURL: listenURL, jobs: jobs, concurrency: concurrency, claimBatch: claimBatch)
        _ = try await client.query(Self.emptyQueueSQL)
    }

    /// `sql` run on every session of `client`'s pool (opening those not yet open), each kept busy
    /// long enough that the next needs a session of its own.
    private func onEverySession(_ client: PostgresClient, _ sql: String = "SELECT pg_sleep(0.02)") async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<client.maxConnections {
                group.addTask { _ = try await client.withConnection { try await $0.query(sql) } }
            }
            try await group.waitForAll()
        }
    }

    /// Runs a worker on `workerClient` until `jobs` no-op jobs are finished; jobs per second, and
    /// the machine's busy share meanwhile.
    private func drain(_ workerClient: PostgresClient, jobs: Int, configuration: QueueConfiguration, listenURL: String,
                       checkedBy client: PostgresClient) async throws -> (jobsPerSecond: Double, machineBusy: Double?) {
        let metrics = QueueMetrics(registry: MetricsRegistry())
        let worker = QueueWorker(store: QueueStore(client: workerClient), handler: NoOpHandler(), configuration: configuration,
                                 logger: quietLogger(), metrics: metrics, listenerConninfo: listenURL)
        let machine = MachineCPU.read()
        let started = ContinuousClock.now
        let run = Task { await worker.run() }
        // Watched through the worker's own counter, then confirmed once: polling the database
        // every 20 ms would load the server during the drain (each probe walks the index entries
        // the drain has just made dead), load the lean ceiling does not carry. The watch sleeps for
        // half the time the rest should take at the rate so far, between 2 and 50 ms: a wake-up
        // every 2 ms throughout would be this process's, counted in the worker's CPU per job.
        while case let finished = metrics.finishedCount(outcome: "acknowledged"), finished < jobs {
            let elapsed = (ContinuousClock.now - started).seconds
            let remaining = finished > 0 ? elapsed / Double(finished) * Double(jobs - finished) : 0.05
            try await Task.sleep(for: .seconds(min(0.05, max(0.002, remaining / 2))))
        }
        // The drain ended when the worker counted its last job finished; the database confirms it
        // after, outside the timing, unless it still had jobs to finish.
        let counted = ContinuousClock.now
        let busy = MachineCPU.busy(since: machine)
        let waited = try await waitUntilDrained(client)
        let seconds = ((waited ? ContinuousClock.now : counted) - started).seconds
        worker.shutdown()
        await run.value
        return (Double(jobs) / seconds, busy)
    }

    /// The same claim and batched-complete statements, driven in a tight loop on two
    /// connections with no queue logic: what the database allows.
    private func rawSQLCeiling(_ client: PostgresClient, jobs: Int, batch: Int) async throws -> Double {
        let started = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<2 {
                group.addTask {
                    let store = QueueStore(client: client)
                    while true {
                        let claimed = try await store.claim(limit: batch, workerID: "raw-\(lane)", leaseSeconds: 60)
                        if claimed.isEmpty { return }
                        _ = try await store.completeDone(claimed.map(\.id), outcome: "acknowledged", workerID: "raw-\(lane)")
                    }
                }
            }
            try await group.waitForAll()
        }
        let rate = Double(jobs) / (ContinuousClock.now - started).seconds
        // A worker drops the lease row of a claim it has let go of (migration 0029); this loop has
        // no worker, and its rows would stay until they expire (the bench runs no rescuer).
        _ = try await client.query("DELETE FROM iap.job_leases WHERE leased_by LIKE 'raw-%'")
        return rate
    }

    private func drainWithProcesses(_ client: PostgresClient, url: String, jobs: Int, processes: Int,
                                    concurrency: Int, claimBatch: Int) async throws -> Double {
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().path
        let started = ContinuousClock.now
        let pids = try (0..<processes).map { _ in
            try WorkerSpawner.spawn(binary, ["work", "--verifier", "noop", "--concurrency", "\(concurrency)", "--claim-batch", "\(claimBatch)"],
                            environment: ["DATABASE_URL": url, "METRICS_LISTEN": "off", "LOG_LEVEL": "warning"])
        }
        try await waitUntilDrained(client)
        let seconds = (ContinuousClock.now - started).seconds
        for pid in pids { kill(pid, SIGTERM) }
        for pid in pids {
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
        return Double(jobs) / seconds
    }

    /// Idle workers, one job at a time: from the enqueue's commit to the claim.
    private func notifyLatency(_ client: PostgresClient, url: String) async throws -> (p50: Double, p99: Double, samples: Int) {
        let claimedAt = Mutex<[String: ContinuousClock.Instant]>([:])
        struct Recorder: JobHandler {
            let claimedAt: @Sendable (String) -> Void
            func verify(_ job: ClaimedJob) async -> Verification<Never> {
                claimedAt(job.orderID ?? "")
                return .decided(.finish(.done, "acknowledged"))
            }
            func settle(_ items: [SettlementItem<Never>], on connection: PostgresConnection) async throws -> SettledBatch { SettledBatch(outcomes: []) }
        }
        var configuration = QueueConfiguration()
        configuration.pollInterval = 5 // NOTIFY must do the work, not the poll
        let worker = QueueWorker(store: QueueStore(client: client),
                                 handler: Recorder(claimedAt: { id in claimedAt.withLock { $0[id] = .now } }),
                                 configuration: configuration, logger: quietLogger(),
                                 metrics: QueueMetrics(registry: MetricsRegistry()), listenerConninfo: url)
        let run = Task { await worker.run() }
        try await Task.sleep(for: .milliseconds(500))
        var latencies: [Double] = []
        for index in 0..<200 {
            let order = "latency-\(index)"
            _ = try await client.query("SELECT iap.enqueue_receipt($1, $2, $3)", ["latency-user", order, "bm9vcA=="])
            let committed = ContinuousClock.now
            let deadline = committed + .seconds(6)
            while ContinuousClock.now < deadline, claimedAt.withLock({ $0[order] == nil }) {
                try await Task.sleep(for: .milliseconds(1))
            }
            if let claimed = claimedAt.withLock({ $0[order] }) { latencies.append(max(0, (claimed - committed).seconds * 1000)) }
            try await Task.sleep(for: .milliseconds(10))
        }
        worker.shutdown()
        await run.value
        latencies.sort()
        guard !latencies.isEmpty else { return (0, 0, 0) }
        return (latencies[latencies.count / 2], latencies[min(latencies.count - 1, latencies.count * 99 / 100)], latencies.count)
    }

    /// CPU used by an idle worker over 5 s, and how often it queried for work.
    private func idleCost(_ client: PostgresClient, url: String) async throws -> (cpuPercent: Double, claimsPerSecond: Double) {
        let registry = MetricsRegistry()
        let worker = QueueWorker(store: QueueStore(client: client), handler: NoOpHandler(), configuration: QueueConfiguration(),
                                 logger: quietLogger(), metrics: QueueMetrics(registry: registry), listenerConninfo: url)
        let run = Task { await worker.run() }
        try await Task.sleep(for: .seconds(1))
        let statistics = StatementStatistics(client: client)
        let counting = await statistics.reset()
        let before = try await claimCalls(client)
        let cpuBefore = ResourceUsage.cpuSeconds()
        let window = 5.0
        try await Task.sleep(for: .seconds(window))
        let cpu = ResourceUsage.cpuSeconds() - cpuBefore
        var after = try await claimCalls(client)
        // With pg_stat_statements the claims themselves are counted, not every transaction
        // (autovacuum's too, after the drains).
        if counting, let claims = await statistics.top(20).first(where: { $0.label == "claim" }) { after = before + claims.calls }
        worker.shutdown()
        await run.value
        return (cpu / window * 100, Double(after - before) / window)
    }

    /// Transactions committed in the database so far, less this probe itself: while only the
    /// idle worker runs, that is its claim queries (pg_stat_statements is not assumed).
    private func claimCalls(_ client: PostgresClient) async throws -> Int {
        _ = try await client.query("SELECT pg_stat_clear_snapshot()")
        return try await client.query("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")[0]
            .decode(Int.self, at: 0) - 2
    }
}

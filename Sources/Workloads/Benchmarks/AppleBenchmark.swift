import AppStore
import AppleSim
import Foundation
import HTTP
import Observability
import Postgres

/// `bench apple`: receipts verified with apple-sim over HTTP and credited, by one real
/// `work` process: at 0 latency (what the worker itself costs, against the raw-SQL ceiling of
/// the same writes measured in the same run) and at Apple's 3 s with `--in-flight` requests
/// (default 2,000; Little's law allows in-flight / 3 s). CPU per receipt is read for the worker
/// (/proc) and, on the private cluster, for every PostgreSQL process.
public struct AppleBenchmark: Sendable {
    let context: BenchContext

    public init(context: BenchContext) { self.context = context }

    struct Measurement {
        let rate: Double
        let rssMiB: Double
        let workerMicrosPerReceipt: Double
        /// nil with DATABASE_URL (the server's processes are not ours to read).
        let serverMicrosPerReceipt: Double?
        /// Seconds from the enqueue's commit to the first job finished, to the end of the first
        /// window (as many jobs finished as run at once: it tells how long filling the slots took)
        /// and to the last.
        let firstFinished: Double
        let firstWindowFinished: Double
        let lastFinished: Double
        let credited: Double
        /// Jobs in the first window (as many as run at once).
        let window: Int
        /// The statements that took most of PostgreSQL's time (empty without pg_stat_statements).
        let statements: [StatementStatistics.Entry]
    }

    /// Run-unique order, user and transaction ids: a `DATABASE_URL` kept between runs (a durable
    /// cluster) already holds the previous run's orders and ledger.
    /// Receipts a second after the first window: what a worker already running sustains. The
    /// whole run's rate also pays, once, for the first window: every slot filled at the same
    /// moment, its connections to Apple opened, and its answers arriving together 3 s later.
    func steadyRate(_ measurement: Measurement) -> Double? {
        let seconds = measurement.lastFinished - measurement.firstWindowFinished
        guard measurement.window > 0, measurement.credited > Double(measurement.window), seconds > 0 else { return nil }
        return (measurement.credited - Double(measurement.window)) / seconds
    }

    private let runTag = String(UInt32.random(in: 0...UInt32.max), radix: 36)

    public func run() async throws -> Int32 {
        let fastCount = context.number("jobs", default: 20_000)
        // At 0 latency the slots turn over as fast as the database writes results: with a few hundred
        // of them the claimer stalls behind the completions' round trips (results being written hold
        // slots too) and the cores idle. A worker facing Apple's 3 s runs thousands anyway.
        let fastConcurrency = context.number("concurrency", default: 1_024)
        let inFlight = context.number("in-flight", default: 2_000)
        return try await context.withDatabase { url, cluster in
            let client = PostgresClient(conninfo: url, maxConnections: 2, applicationName: "receipt-worker-bench")
            try await context.migrate(client)
            BenchReport.line("apple", "setup", ["database": cluster == nil ? "DATABASE_URL" : "private cluster (fsync=off)",
                             "cores": "\(ProcessInfo.processInfo.activeProcessorCount)", "apple": "apple-sim over loopback HTTP"])

            // Rounds, each the worker beside its ceiling (this machine's speed drifts between minutes);
            // the round with the median ratio is reported.
            var rounds: [(fast: Measurement, ceiling: Double, ceilingServerMicros: Double?)] = []
            for round in 0..<context.number("rounds", default: 3) {
                let fast = try await measure(client, url: url, count: fastCount, latency: nil, concurrency: fastConcurrency, claimBatch: 500,
                                             tag: "fast-\(runTag)-\(round)")
                let (ceiling, ceilingServerMicros) = try await moneyCeiling(client, count: fastCount, tag: "raw-\(runTag)-\(round)")
                rounds.append((fast, ceiling, ceilingServerMicros))
                BenchReport.line("apple", "latency_0_round", ["round": "\(round + 1)", "verified_credited_per_s": BenchReport.figure(fast.rate),
                                 "raw_sql_money_ceiling_per_s": BenchReport.figure(ceiling), "ratio_to_ceiling": String(format: "%.2f", fast.rate / ceiling),
                                 "worker_cpu_us_per_receipt": BenchReport.figure(fast.workerMicrosPerReceipt),
                                 "postgres_cpu_us_per_receipt": fast.serverMicrosPerReceipt.map(BenchReport.figure) ?? "n/a",
                                 "ceiling_postgres_cpu_us_per_receipt": ceilingServerMicros.map(BenchReport.figure) ?? "n/a"])
            }
            let ratio = BenchReport.median(rounds.map { $0.fast.rate / $0.ceiling })
            let (fast, ceiling, ceilingServerMicros) = rounds.first { $0.fast.rate / $0.ceiling == ratio } ?? rounds[0]
            BenchReport.line("apple", "latency_0", ["verified_credited_per_s": BenchReport.figure(fast.rate), "receipts": "\(fastCount)",
                             "concurrency": "\(fastConcurrency)", "raw_sql_money_ceiling_per_s": BenchReport.figure(ceiling),
                             "ratio_to_ceiling": String(format: "%.2f", ratio), "rounds": "\(rounds.count)",
                             "worker_cpu_us_per_receipt": BenchReport.figure(fast.workerMicrosPerReceipt),
                             "postgres_cpu_us_per_receipt": fast.serverMicrosPerReceipt.map(BenchReport.figure) ?? "n/a",
                             "ceiling_postgres_cpu_us_per_receipt": ceilingServerMicros.map(BenchReport.figure) ?? "n/a",
                             "worker_peak_rss_mb": BenchReport.figure(fast.rssMiB)])
            report(fast, phase: "latency_0", claimLimit: min(fastConcurrency, 500))

            // Twelve 3 s waves (24,000 receipts at least, 120,000 at most): the first wave's connects and
            // the last wave's settlement are one-off costs that a short run would count as a large share
            // of the throughput. At 10,000 in flight the first wave alone takes a second more than the
            // others (every connection opened at once).
            let slowCount = max(24_000, min(inFlight * 12, 120_000))
            // Apple itself: apple-sim at 3 s, or the fake Apple outside the product that --apple-url names.
            let outsideApple = context.texts["apple-url"]
            let slow = try await measure(client, url: url, count: slowCount, latency: SimLatency(.seconds(3)), concurrency: inFlight,
                                         claimBatch: 500, tag: "slow-\(runTag)", outsideApple: outsideApple)
            let allowed = min(Double(inFlight) / 3, fast.rate)
            let steady = steadyRate(slow).map { [("after_first_window_per_s", BenchReport.figure($0)),
                                                 ("after_first_window_ratio_to_ceiling", String(format: "%.2f", $0 / allowed))] } ?? []
            BenchReport.line("apple", "latency_3s", [("verified_credited_per_s", BenchReport.figure(slow.rate)), ("receipts", "\(slowCount)"),
                             ("apple", outsideApple.map { "outside (\($0))" } ?? "apple-sim"),
                             ("in_flight", "\(inFlight)"), ("ceiling_per_s", BenchReport.figure(allowed)),
                             ("ratio_to_ceiling", String(format: "%.2f", slow.rate / allowed))] + steady + [
                             ("worker_cpu_us_per_receipt", BenchReport.figure(slow.workerMicrosPerReceipt)),
                             ("postgres_cpu_us_per_receipt", slow.serverMicrosPerReceipt.map(BenchReport.figure) ?? "n/a"),
                             ("worker_peak_rss_mb", BenchReport.figure(slow.rssMiB))])
            report(slow, phase: "latency_3s", claimLimit: min(inFlight, 500))
            await client.close()
            return 0
        }
    }

    /// Where the run's time went: when jobs finished, how large claims were and what they cost,
    /// and PostgreSQL's time per receipt by statement.
    private func report(_ measurement: Measurement, phase: String, claimLimit: Int) {
        BenchReport.line("apple", phase + "_timeline", ["first_job_finished_s": String(format: "%.2f", measurement.firstFinished),
                                                        "first_window_finished_s": String(format: "%.2f", measurement.firstWindowFinished),
                                                        "last_job_finished_s": String(format: "%.2f", measurement.lastFinished)])
        guard !measurement.statements.isEmpty else { return }
        if let claim = measurement.statements.first(where: { $0.label == "claim" }), claim.calls > 0, claim.rows > 0 {
            BenchReport.line("apple", phase + "_claims", [
                "claims": "\(claim.calls)", "jobs_per_claim": BenchReport.figure(Double(claim.rows) / Double(claim.calls)),
                "claim_limit": "\(claimLimit)", "claim_us_per_job": BenchReport.figure(claim.milliseconds * 1000 / Double(claim.rows))])
        }
        // The setup's enqueue of every receipt in one statement is not the money path's cost.
        let moneyPath = measurement.statements.filter { !$0.label.contains("enqueue") }
        BenchReport.line("apple", phase + "_statement_time_us_per_receipt", moneyPath.map { entry in
            (entry.label.replacingOccurrences(of: " ", with: "_"), BenchReport.figure(entry.milliseconds * 1000 / max(1, measurement.credited)))
        })
    }

    /// The same receipts' database writes as set-based SQL (`MoneyPathCeiling`): receipts per
    /// second, and PostgreSQL's CPU per receipt (nil when the server is not a process of this machine).
    private func moneyCeiling(_ client: PostgresClient, count: Int, tag: String) async throws -> (rate: Double, serverMicros: Double?) {
        let paid = try await PaidReceipts.prepare(client, tag: tag, count: count, bundleID: "com.example.bench")
        try await paid.enqueue(client)
        _ = try await client.query("ANALYZE iap.job_queue, iap.job_requests")
        let server = await DatabaseServerCPU.locate(client)
        let before = server?.seconds()
        let rate = try await MoneyPathCeiling(client: client, batch: 100).drain(expected: count)
        let serverMicros = server.flatMap { server in before.map { (server.seconds() - $0) * 1e6 / Double(max(1, count)) } }
        return (rate, serverMicros)
    }

    private func measure(_ client: PostgresClient, url: String, count: Int, latency: SimLatency?, concurrency: Int,
                         claimBatch: Int, tag: String, outsideApple: String? = nil) async throws -> Measurement {
        let simulator = AppleSimulator(configuration: AppleSimConfiguration(sharedSecret: "bench-secret", faults: AppleSimFaults(latency: latency)))
        if outsideApple == nil { _ = try simulator.start() }
        let paid = try await PaidReceipts.prepare(client, tag: tag, count: count, bundleID: "com.example.bench")
        let before = try await credits(client)
        let worker = try WorkerSpawner.spawn(context.binaryPath, ["work"], environment: [
            "DATABASE_URL": url, "METRICS_LISTEN": "off", "LOG_LEVEL": "warning",
            "APPLE_BUNDLE_ID": "com.example.bench", "APPLE_SHARED_SECRET": "bench-secret",
            "APPLE_VERIFY_RECEIPT_URL": outsideApple ?? simulator.productionURL.absoluteString,
            "APPLE_VERIFY_RECEIPT_SANDBOX_URL": outsideApple ?? simulator.sandboxURL.absoluteString,
            "WORKER_CONCURRENCY": "\(concurrency)", "CLAIM_BATCH": "\(claimBatch)", "APPLE_TIMEOUT_SECONDS": "10",
        ])
        // A run that throws must not leave its worker behind (it would poll a removed cluster forever).
        var stopped = false
        defer {
            if !stopped {
                kill(worker, SIGKILL)
                var status: Int32 = 0
                waitpid(worker, &status, 0)
            }
        }
        try await Task.sleep(for: .milliseconds(500)) // the worker is up and listening before the burst
        let statistics = StatementStatistics(client: client)
        let counting = await statistics.reset()
        let server = await DatabaseServerCPU.locate(client)
        // One statement enqueues them all: the worker sees none before it commits, so the clock
        // and the CPU counters start there (the web tier's enqueue is not the money path's cost).
        try await paid.enqueue(client)
        let started = ContinuousClock.now
        let enqueued = try await client.query("SELECT clock_timestamp()")[0].decode(Date.self, at: 0)
        let workerCPU = ResourceUsage.cpuSeconds(pid: worker)
        let serverCPU = server?.seconds()
        var peakRSS = 0.0
        // Watched through apple-sim's own count until every receipt was asked about, then through
        // the database for the last completions: a database probe every 100 ms for the whole run
        // would take PostgreSQL CPU from the money path (it walks the index entries the run has just
        // made dead).
        // A count that stops short (a receipt the worker settled without asking Apple) is checked
        // against the database once it has stood still for 10 s (longer than any latency the bench
        // asks of apple-sim, so a run that is only waiting on Apple is not probed); a worker that
        // died ends the run.
        var asked = (count: 0, at: ContinuousClock.now)
        while ContinuousClock.now - started <= .seconds(600) {
            peakRSS = max(peakRSS, ResourceUsage.peakRSSMiB(pid: String(worker)))
            var exit: Int32 = 0
            if waitpid(worker, &exit, WNOHANG) == worker { throw WorkloadError("bench apple: the worker process exited during the run") }
            // An outside Apple keeps no count: the database is probed, every half second.
            let requests = outsideApple == nil ? simulator.stats.requests : count
            if requests != asked.count { asked = (requests, ContinuousClock.now) }
            if outsideApple != nil, ContinuousClock.now - started < .seconds(3) {
                try await Task.sleep(for: .milliseconds(500))
                continue
            }
            if requests < count, ContinuousClock.now - asked.at < .seconds(10) {
                try await Task.sleep(for: .milliseconds(20))
                continue
            }
            guard try await hasUnfinishedJobs(client) else { break }
            try await Task.sleep(for: .milliseconds(outsideApple == nil ? 100 : 500))
        }
        let seconds = (ContinuousClock.now - started).seconds
        peakRSS = max(peakRSS, ResourceUsage.peakRSSMiB(pid: String(worker)))
        let credited = Double(try await credits(client) - before)
        let statements = counting ? await statistics.top(8) : []
        let finished = try await client.query("SELECT min(finished_at), max(finished_at) FROM iap.job_queue WHERE finished_at >= $1", [enqueued])[0]
        let firstFinished = try finished.decode(Date?.self, at: 0).map { $0.timeIntervalSince(enqueued) } ?? 0
        let lastFinished = try finished.decode(Date?.self, at: 1).map { $0.timeIntervalSince(enqueued) } ?? 0
        let window = try await client.query("SELECT finished_at FROM iap.job_queue WHERE finished_at >= $1 ORDER BY finished_at OFFSET $2 LIMIT 1",
                                            [enqueued, min(concurrency, count) - 1])
        let firstWindowFinished = try window.first?.decode(Date?.self, at: 0).map { $0.timeIntervalSince(enqueued) } ?? 0
        let workerMicros = (ResourceUsage.cpuSeconds(pid: worker) - workerCPU) * 1e6 / max(1, credited)
        let serverMicros = server.flatMap { server in serverCPU.map { (server.seconds() - $0) * 1e6 / max(1, credited) } }
        kill(worker, SIGTERM)
        var status: Int32 = 0
        waitpid(worker, &status, 0)
        stopped = true
        if outsideApple == nil { await simulator.shutdown() }
        // The run lasts from the enqueue's commit to the last job's completion, both read off the
        // database's clock; the 100 ms poll above only notices the end (it would add up to a poll).
        let duration = lastFinished > 0 ? lastFinished : seconds
        return Measurement(rate: credited / duration, rssMiB: peakRSS, workerMicrosPerReceipt: workerMicros,
                           serverMicrosPerReceipt: serverMicros, firstFinished: firstFinished, firstWindowFinished: firstWindowFinished, lastFinished: lastFinished,
                           credited: credited, window: min(concurrency, count), statements: statements)
    }

    private func hasUnfinishedJobs(_ client: PostgresClient) async throws -> Bool {
        try await client.query(QueueProbe.unfinishedSQL)[0]
            .decode(Bool.self, at: 0)
    }

    private func credits(_ client: PostgresClient) async throws -> Int {
        try await client.query("SELECT count(*) FROM iap.credits")[0].decode(Int.self, at: 0)
    }
}

import AppStore
import AppleSim
import Foundation
import Observability
import Postgres

/// `bench apple`: receipts verified with apple-sim over HTTP and credited, by one real
/// `work` process: at 0 latency (what the worker itself costs) and at Apple's 3 s with
/// WORKER_CONCURRENCY=2000 (what Little's law allows: 2000 / 3 s = 667/s).
public struct AppleBenchmark: Sendable {
    let context: BenchContext

    public init(context: BenchContext) { self.context = context }

    public func run() async throws -> Int32 {
        let fastCount = context.number("jobs", default: 20_000)
        return try await context.withDatabase { url, cluster in
            let client = PostgresClient(conninfo: url, maxConnections: 2, applicationName: "receipt-worker-bench")
            try await context.migrate(client)
            BenchReport.line("apple", "setup", ["database": cluster == nil ? "DATABASE_URL" : "private cluster (fsync=off)",
                             "cores": "\(ProcessInfo.processInfo.activeProcessorCount)", "apple": "apple-sim over loopback HTTP"])

            let fast = try await measure(client, url: url, count: fastCount, latency: nil, concurrency: 256, claimBatch: 500, tag: "fast")
            BenchReport.line("apple", "latency_0", ["verified_credited_per_s": BenchReport.figure(fast.rate), "receipts": "\(fastCount)", "concurrency": "256",
                                 "worker_peak_rss_mb": BenchReport.figure(fast.rssMiB), "target_per_s": "3000"])

            // Twelve 3 s waves: the first wave's 2,000 connects and the last wave's settlement are
            // one-off costs that a six-wave run would count as a sixth of the throughput.
            let slowCount = 24_000
            let slow = try await measure(client, url: url, count: slowCount, latency: SimLatency(.seconds(3)), concurrency: 2_000,
                                         claimBatch: 500, tag: "slow")
            BenchReport.line("apple", "latency_3s", ["verified_credited_per_s": BenchReport.figure(slow.rate), "receipts": "\(slowCount)", "concurrency": "2000",
                                  "worker_peak_rss_mb": BenchReport.figure(slow.rssMiB), "ceiling_per_s": "667", "target_per_s": "600",
                                  "rss_target_mb": "300"])
            await client.close()
            return 0
        }
    }



    private func measure(_ client: PostgresClient, url: String, count: Int, latency: SimLatency?, concurrency: Int,
                         claimBatch: Int, tag: String) async throws -> (rate: Double, rssMiB: Double) {
        let simulator = AppleSimulator(configuration: AppleSimConfiguration(sharedSecret: "bench-secret", faults: AppleSimFaults(latency: latency)))
        _ = try simulator.start()
        let paid = try await PaidReceipts.prepare(client, tag: tag, count: count, bundleID: "com.example.bench")
        let before = try await credits(client)
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().path
        let worker = try WorkerSpawner.spawn(binary, ["work"], environment: [
            "DATABASE_URL": url, "METRICS_LISTEN": "off", "LOG_LEVEL": "warning",
            "APPLE_BUNDLE_ID": "com.example.bench", "APPLE_SHARED_SECRET": "bench-secret",
            "APPLE_VERIFY_RECEIPT_URL": simulator.productionURL.absoluteString,
            "APPLE_VERIFY_RECEIPT_SANDBOX_URL": simulator.sandboxURL.absoluteString,
            "WORKER_CONCURRENCY": "\(concurrency)", "CLAIM_BATCH": "\(claimBatch)", "APPLE_TIMEOUT_SECONDS": "10",
        ])
        try await Task.sleep(for: .milliseconds(500)) // the worker is up and listening before the burst
        try await paid.enqueue(client)
        let started = ContinuousClock.now
        var peakRSS = 0.0
        while try await credits(client) - before < count {
            peakRSS = max(peakRSS, ResourceUsage.peakRSSMiB(pid: String(worker)))
            if ContinuousClock.now - started > .seconds(600) { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        let seconds = (ContinuousClock.now - started).seconds
        peakRSS = max(peakRSS, ResourceUsage.peakRSSMiB(pid: String(worker)))
        kill(worker, SIGTERM)
        var status: Int32 = 0
        waitpid(worker, &status, 0)
        await simulator.shutdown()
        return (Double(try await credits(client) - before) / seconds, peakRSS)
    }

    private func credits(_ client: PostgresClient) async throws -> Int {
        try await client.query("SELECT count(*) FROM iap.credits")[0].decode(Int.self, at: 0)
    }
}

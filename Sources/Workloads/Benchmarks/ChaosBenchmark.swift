import AppleSim
import EmbeddedPostgres
import Foundation
import HTTP
import Observability
import Postgres

/// `bench chaos`: three real workers reach PostgreSQL through a TCP relay that, mid-run,
/// stops forwarding on every connection open at that moment without closing any (a crashed
/// host, a failover, a dropped NAT entry). Prints how long until jobs finish again — the
/// target is LEASE_SECONDS + 10 s — and checks every receipt is credited exactly once.
public struct ChaosBenchmark: Sendable {
    let context: BenchContext

    public init(context: BenchContext) { self.context = context }

    static let leaseSeconds = 10.0
    static let workers = 3

    public func run() async throws -> Int32 {
        let count = context.number("jobs", default: 6_000)
        return try await context.withDatabase { url, cluster in
            let client = PostgresClient(conninfo: url, maxConnections: 2, applicationName: "receipt-worker-bench")
            let simulator = AppleSimulator(configuration: AppleSimConfiguration(
                sharedSecret: "chaos-secret", faults: AppleSimFaults(latency: SimLatency(min: .milliseconds(50), max: .milliseconds(150)))))
            guard let port = URLComponents(string: url)?.port else { throw WorkloadError("bench chaos needs a postgresql:// URL with a port") }
            let proxy = try FaultProxy(targetPort: port, targetHost: URLComponents(string: url)?.host ?? "127.0.0.1")
            var pids: [pid_t] = []
            defer {
                for pid in pids { kill(pid, SIGKILL) }
                proxy.stop()
            }
            try await context.migrate(client)
            _ = try simulator.start()
            let tag = "chaos-" + UUID().uuidString.prefix(8).lowercased()
            try await PaidReceipts.prepare(client, tag: tag, count: count, bundleID: "com.example.chaos").enqueue(client)
            BenchReport.line("chaos", "setup", ["database": cluster == nil ? "DATABASE_URL" : "private cluster (fsync=off)",
                             "workers": "\(Self.workers)", "receipts": "\(count)", "lease_s": BenchReport.figure(Self.leaseSeconds),
                             "db_call_timeout_s": "5", "idle_in_transaction_timeout_s": "5", "leader_ttl_s": "5"])
            let environment = [
                "DATABASE_URL": proxy.url(replacingIn: url), "METRICS_LISTEN": "off", "LOG_LEVEL": "error",
                "APPLE_BUNDLE_ID": "com.example.chaos", "APPLE_SHARED_SECRET": "chaos-secret",
                "APPLE_VERIFY_RECEIPT_URL": simulator.productionURL.absoluteString,
                "APPLE_VERIFY_RECEIPT_SANDBOX_URL": simulator.sandboxURL.absoluteString,
                "WORKER_CONCURRENCY": "100", "CLAIM_BATCH": "50", "LEASE_SECONDS": BenchReport.figure(Self.leaseSeconds),
                "DATABASE_CALL_TIMEOUT_SECONDS": "5", "DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_SECONDS": "5", "LEADER_TTL_SECONDS": "5",
                "SWEEP_INTERVAL_SECONDS": "2",
            ]
            pids = try (0..<Self.workers).map { _ in try WorkerSpawner.spawn(context.binaryPath, ["work"], environment: environment) }
            try await waitForCredits(client, tag: tag, atLeast: count * 3 / 10, within: 300)
            let frozenConnections = proxy.openConnections
            proxy.freezeOpenConnections()
            let frozenAt = ContinuousClock.now
            // COMMITs already on the wire still land: count once those settled.
            try await Task.sleep(for: .seconds(1))
            let atFreeze = try await credits(client, tag: tag)
            try await waitForCredits(client, tag: tag, atLeast: atFreeze + 1, within: 120)
            let resumed = (ContinuousClock.now - frozenAt).seconds
            try await waitForCredits(client, tag: tag, atLeast: count, within: 600)
            let finished = (ContinuousClock.now - frozenAt).seconds
            for pid in pids { kill(pid, SIGTERM) }
            for pid in pids { waitpid(pid, nil, 0) }
            pids = []
            let check = try await client.query("""
                SELECT (SELECT count(*) FROM iap.credits WHERE user_id LIKE $1),
                       (SELECT count(*) FROM iap.orders WHERE user_id LIKE $1 AND status = 'credited'),
                       (SELECT count(*) FROM iap.jobs WHERE user_id LIKE $1 AND state = 'running')
                """, [tag + "-%"])[0]
            let ledger: Int = try check.decode(at: 0), orders: Int = try check.decode(at: 1), running: Int = try check.decode(at: 2)
            let passed = ledger == count && orders == count && running == 0 && resumed <= Self.leaseSeconds + 10
            BenchReport.line("chaos", "freeze", ["frozen_connections": "\(frozenConnections)", "resumed_after_s": BenchReport.figure(resumed),
                             "target_s": BenchReport.figure(Self.leaseSeconds + 10), "all_credited_after_s": BenchReport.figure(finished),
                             "credited": "\(ledger)", "orders_credited": "\(orders)", "left_running": "\(running)", "pass": "\(passed)"])
            await simulator.shutdown()
            await client.close()
            return passed ? 0 : 1
        }
    }

    private func credits(_ client: PostgresClient, tag: String) async throws -> Int {
        try await client.query("SELECT count(*) FROM iap.credits WHERE user_id LIKE $1", [tag + "-%"])[0].decode(Int.self, at: 0)
    }

    private func waitForCredits(_ client: PostgresClient, tag: String, atLeast target: Int, within seconds: Double) async throws {
        let started = ContinuousClock.now
        while try await credits(client, tag: tag) < target {
            if (ContinuousClock.now - started).seconds > seconds {
                throw WorkloadError("bench chaos: fewer than \(target) credits after \(Int(seconds)) s")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }
}

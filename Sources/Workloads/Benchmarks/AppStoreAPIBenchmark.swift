import AppStore
import AppleSim
import Foundation
import HTTP
import Observability
import Postgres
import Settlement

/// `bench appstore`: the fleet-wide App Store Server API limit with real worker processes,
/// with a 429 halfway (what the fleet sent during Retry-After, and when it sent again), and a history
/// backfill of 10,000 missed notifications over 500 pages, all against apple-sim, which refuses any
/// request out of Apple's documented shape.
public struct AppStoreAPIBenchmark: Sendable {
    let context: BenchContext

    public init(context: BenchContext) { self.context = context }
    static let bundleID = "com.example.bench"
    static let ratePerSecond = 20
    /// The 429 apple-sim answers halfway through the fleet run.
    static let retryAfter: Duration = .seconds(3)

    public func run() async throws -> Int32 {
        let jobs = context.number("jobs", default: 5_000)
        let processes = context.number("processes", default: 3)
        return try await context.withDatabase { url, _ in
            let client = PostgresClient(conninfo: url, maxConnections: 2, applicationName: "receipt-worker-bench")
            try await context.migrate(client)
            let simulator = AppleSimulator()
            _ = try simulator.start()
            let fleet = try await fleetLimit(client, url: url, simulator: simulator, jobs: jobs, processes: processes)
            BenchReport.line("appstore", "fleet_limit", [
                "processes": "\(processes)", "jobs": "\(jobs)", "limit_per_s": "\(Self.ratePerSecond)",
                "max_requests_in_one_second": "\(fleet.maxPerSecond)", "throughput_per_s": BenchReport.figure(fleet.rate),
                "of_limit": String(format: "%.2f", fleet.rate / Double(Self.ratePerSecond)), "target": "max<=21 of_limit>=0.90",
            ])
            let after429 = simulator.serverAPI.retryAfterReports.first
            BenchReport.line("appstore", "after_429", [
                "retry_after_s": BenchReport.figure(Self.retryAfter.seconds),
                "requests_during_retry_after": after429.map { "\($0.requestsDuringRetryAfter)" } ?? "no 429",
                "next_request_after_s": after429?.nextRequestAfter.map { String(format: "%.2f", $0) } ?? "none",
                "target": "0 during, next >= retry_after",
            ])
            let history = try await backfill(client, simulator: simulator, notifications: 10_000)
            BenchReport.line("appstore", "history_backfill", [
                "notifications": "10000", "pages": "\(history.counts.pages)", "enqueued": "\(history.counts.enqueued)",
                "jobs": "\(history.jobs)", "seconds": BenchReport.figure(history.seconds), "target": "all once, <60s",
            ])
            await simulator.shutdown()
            await client.close()
            return 0
        }
    }

    /// `processes` workers share 20 requests/s through the database while draining `jobs` transaction_id jobs.
    private func fleetLimit(_ client: PostgresClient, url: String, simulator: AppleSimulator, jobs: Int,
                            processes: Int) async throws -> (rate: Double, maxPerSecond: Int) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("rw-bench-appstore-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let keyFile = folder.appendingPathComponent("key.p8").path, rootFile = folder.appendingPathComponent("root.pem").path
        try simulator.serverAPI.writeAPIPrivateKey(to: keyFile)
        try simulator.serverAPI.signingChain.writeRootPEM(to: rootFile)
        simulator.serverAPI.registerTransactions(prefix: "fleet", count: jobs, productID: "coins_100", bundleID: Self.bundleID)
        _ = try await client.query("""
            INSERT INTO iap.orders (order_id, user_id, product_id) SELECT 'fleet-o' || n, 'fleet-u' || n, 'coins_100' FROM generate_series(1, $1) AS n
            """, [jobs])
        _ = try await client.query("ANALYZE iap.orders")
        let environment = [
            "DATABASE_URL": url, "METRICS_LISTEN": "off", "LOG_LEVEL": "warning", "APPLE_BUNDLE_ID": Self.bundleID,
            "APPLE_VERIFY_RECEIPT_URL": simulator.productionURL.absoluteString,
            "APPLE_VERIFY_RECEIPT_SANDBOX_URL": simulator.sandboxURL.absoluteString,
            "APPSTORE_API_URL": simulator.baseURL.absoluteString,
            "APPSTORE_API_SANDBOX_URL": simulator.baseURL.appendingPathComponent("sandbox").absoluteString,
            "APPSTORE_ISSUER_ID": SimServerAPI.defaultIssuerID, "APPSTORE_KEY_ID": SimServerAPI.defaultKeyID,
            "APPSTORE_PRIVATE_KEY_FILE": keyFile, "APPLE_ROOT_CERTS": rootFile,
            "APPSTORE_API_RATE_PER_SECOND": "\(Self.ratePerSecond)", "NOTIFICATION_HISTORY_INTERVAL_SECONDS": "0",
        ]
        let workers = try (0..<processes).map { _ in try WorkerSpawner.spawn(context.binaryPath, ["work"], environment: environment) }
        try await Task.sleep(for: .milliseconds(500))
        simulator.serverAPI.inject(.rateLimited(for: Self.retryAfter, skip: jobs / 2, family: .transactionInfo))
        _ = try await client.query("""
            SELECT count(iap.enqueue_transaction_id('fleet-u' || n, 'fleet-o' || n, 'fleet-' || n)) FROM generate_series(1, $1) AS n
            """, [jobs])
        let started = ContinuousClock.now
        while try await client.query("SELECT count(*) FROM iap.credits")[0].decode(Int.self, at: 0) < jobs,
              ContinuousClock.now - started < .seconds(Double(jobs) / Double(Self.ratePerSecond) * 3 + 30) {
            try await Task.sleep(for: .milliseconds(200))
        }
        let seconds = (ContinuousClock.now - started).seconds
        for pid in workers { kill(pid, SIGTERM) }
        for pid in workers {
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
        let credited = try await client.query("SELECT count(*) FROM iap.credits")[0].decode(Int.self, at: 0)
        return (Double(credited) / seconds, simulator.serverAPI.maxAPIRequestsPerSecond)
    }

    /// 10,000 notifications Apple failed to deliver, 500 pages of 20, pulled through the same fleet limit.
    private func backfill(_ client: PostgresClient, simulator: AppleSimulator,
                          notifications: Int) async throws -> (counts: NotificationHistoryPuller.Counts, jobs: Int, seconds: Double) {
        try simulator.serverAPI.recordFailedNotifications(count: notifications, bundleID: Self.bundleID, appAppleID: nil)
        let api = try AppStoreServerAPIClient(
            configuration: AppStoreServerAPIConfiguration(
                productionURL: simulator.baseURL, sandboxURL: simulator.baseURL.appendingPathComponent("sandbox"),
                issuerID: SimServerAPI.defaultIssuerID, keyID: SimServerAPI.defaultKeyID, bundleID: Self.bundleID,
                privateKey: simulator.serverAPI.apiPrivateKey),
            limiter: PostgresRateLimiter(client: client, limit: AppStoreRateLimit(perSecond: Double(Self.ratePerSecond))))
        let puller = NotificationHistoryPuller(client: client, api: api, metrics: SettlementMetrics(registry: MetricsRegistry()),
                                               logger: context.logger.withMinimumLevel(.warning))
        let started = ContinuousClock.now
        let counts = try await puller.backfill(since: Double(notifications) + 60)
        let seconds = (ContinuousClock.now - started).seconds
        let jobs = try await client.query("SELECT count(*) FROM iap.jobs WHERE kind = 'notification'")[0].decode(Int.self, at: 0)
        return (counts, jobs, seconds)
    }
}

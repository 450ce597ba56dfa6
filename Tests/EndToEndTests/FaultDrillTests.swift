import AppStore
import AppleSim
import Foundation
import Postgres
import TestSupport
import XCTest

/// 10,000 paid receipts through 3 real worker processes while Apple (apple-sim over HTTP)
/// fails 20% of requests in every way it can and goes down for 10 s.
final class FaultDrillTests: XCTestCase {
    func testTenThousandReceiptsUnderFaultsAndAnOutage() async throws {
        let count = 10_000
        let url = try await TestDatabase.fresh()
        let client = PostgresClient(conninfo: url, maxConnections: 2)
        let faults = AppleSimFaults(latency: SimLatency(min: .milliseconds(1), max: .milliseconds(30)), errorRate: 0.05,
                                    status21005Rate: 0.04, retryableRate: 0.03, hangRate: 0.02, resetRate: 0.03, malformedRate: 0.03,
                                    outage: SimOutage(start: .seconds(3), duration: .seconds(10)))
        let simulator = AppleSimulator(configuration: AppleSimConfiguration(sharedSecret: "drill-secret", seed: 42, faults: faults))
        _ = try simulator.start()

        _ = try await client.query("""
            INSERT INTO iap.orders (order_id, user_id, product_id)
            SELECT 'o' || n, 'u' || n, 'coins_100' FROM generate_series(1, $1) AS n
            """, [count])
        let receipts = (1...count).map {
            SimReceipt(bundleID: "com.example.drill", transactions: [.init(transactionID: "t\($0)", productID: "coins_100")]).mint()
        }
        _ = try await client.query("""
            SELECT count(iap.enqueue_receipt(u, o, r)) FROM unnest($1::text[], $2::text[], $3::text[]) AS x(u, o, r)
            """, [(1...count).map { "u\($0)" }, (1...count).map { "o\($0)" }, receipts])

        let environment = [
            "DATABASE_URL": url, "METRICS_LISTEN": "off", "LOG_LEVEL": "warning",
            "APPLE_BUNDLE_ID": "com.example.drill", "APPLE_SHARED_SECRET": "drill-secret",
            "APPLE_VERIFY_RECEIPT_URL": simulator.productionURL.absoluteString,
            "APPLE_VERIFY_RECEIPT_SANDBOX_URL": simulator.sandboxURL.absoluteString,
            "APPLE_TIMEOUT_SECONDS": "1", "RETRY_SCHEDULE": "0.2,0.5,1,2", "MAX_ATTEMPTS": "6",
            "SWEEP_INTERVAL_SECONDS": "1", "LEASE_SECONDS": "15", "WORKER_CONCURRENCY": "200", "CLAIM_BATCH": "100",
        ]
        let workers = try (0..<3).map { _ in try ChildProcess.receiptWorker(["work"], environment: environment) }
        defer { workers.forEach { $0.signal(SIGKILL) } }

        let deadline = Date().addingTimeInterval(240)
        var credited = 0
        while Date() < deadline {
            credited = try await client.query("SELECT count(*) FROM iap.credits")[0].decode(Int.self, at: 0)
            if credited == count { break }
            try await Task.sleep(for: .milliseconds(250))
        }
        for worker in workers { worker.signal(SIGTERM) }
        for worker in workers {
            let code = try await worker.wait(timeout: 60)
            XCTAssertEqual(code, 0, worker.stderr)
        }
        XCTAssertEqual(credited, count, "every paid receipt credited")
        let summary = try await client.query("""
            SELECT (SELECT count(DISTINCT transaction_id) FROM iap.credits),
                   (SELECT count(*) FROM iap.orders WHERE status = 'credited'),
                   (SELECT count(*) FROM iap.jobs WHERE state = 'running'),
                   (SELECT count(*) FROM iap.jobs WHERE state = 'done' AND outcome = 'credited'),
                   (SELECT count(*) FROM iap.alerts WHERE kind = 'paid_not_credited')
            """)[0]
        XCTAssertEqual(try summary.decode(Int.self, at: 0), count, "exactly once: one ledger row per transaction")
        XCTAssertEqual(try summary.decode(Int.self, at: 1), count)
        XCTAssertEqual(try summary.decode(Int.self, at: 2), 0, "no job stuck running")
        XCTAssertEqual(try summary.decode(Int.self, at: 3), count, "nothing lost")
        XCTAssertEqual(try summary.decode(Int.self, at: 4), 0)
        let stats = simulator.stats
        XCTAssertEqual(stats.paid.count, count, "apple-sim answered every receipt as paid at least once")
        XCTAssertGreaterThan(stats.byResult.filter { $0.key != "ok" }.values.reduce(0, +), count / 10, "faults were injected: \(stats.byResult)")
        for worker in workers { XCTAssertFalse(worker.stdout.contains("drill-secret")) }
        await simulator.shutdown()
        await client.close()
    }
}

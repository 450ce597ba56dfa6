import AppStore
import AppleSim
import Foundation
import HTTP
import Postgres
import TestSupport
import XCTest

/// What on-call sees of a worker: /metrics, /healthz, /readyz, and surviving a database restart.
final class OperationsTests: XCTestCase {
    typealias T = SimReceipt.Transaction

    func workerEnvironment(_ url: String, simulator: AppleSimulator) -> [String: String] {
        ["DATABASE_URL": url, "METRICS_LISTEN": "127.0.0.1:0", "LOG_LEVEL": "info", "APPLE_BUNDLE_ID": "com.example.ops",
         "APPLE_SHARED_SECRET": "ops-secret", "APPLE_VERIFY_RECEIPT_URL": simulator.productionURL.absoluteString,
         "APPLE_VERIFY_RECEIPT_SANDBOX_URL": simulator.sandboxURL.absoluteString, "RETRY_SCHEDULE": "0.1", "MAX_ATTEMPTS": "3",
         "SWEEP_INTERVAL_SECONDS": "0.5"]
    }

    func testMetricsScrapeAfterEveryOutcomeIsStrictlyValid() async throws {
        let url = try await TestDatabase.fresh()
        let client = PostgresClient(conninfo: url)
        let simulator = AppleSimulator(configuration: AppleSimConfiguration(sharedSecret: "ops-secret"))
        _ = try simulator.start()
        _ = try await client.query("INSERT INTO iap.orders (order_id, user_id, product_id) VALUES ('o1', 'u1', 'coins'), ('o2', 'u2', 'coins')")
        func receipt(_ id: String, _ environment: AppleEnvironment = .production, status: Int? = nil, bundle: String = "com.example.ops") -> String {
            SimReceipt(bundleID: bundle, environment: environment, transactions: [T(transactionID: id, productID: "coins")], forceStatus: status).mint()
        }
        let submissions: [(String, String?, String)] = [
            ("u1", "o1", receipt("m1")),                              // credited
            ("u1", "o9", receipt("m1")),                              // already_credited
            ("u3", "o3", receipt("m1")),                              // replayed
            ("u2", "o2", receipt("m2", .sandbox)),                    // sandbox_rejected
            ("u2", "o2", receipt("m3", bundle: "com.other")),         // wrong_bundle
            ("u4", nil, receipt("m4")),                               // paid_not_credited
            ("u2", "o2", receipt("m5", status: 21004)),               // config_error
            ("u2", "o2", receipt("m6", status: 21010)),               // invalid_receipt
            ("u2", "o2", Data("junk".utf8).base64EncodedString()),    // 21002 x3 -> invalid_receipt, with retries
        ]
        for (user, order, data) in submissions {
            _ = try await client.query("SELECT iap.enqueue_receipt($1, $2, $3)", [user, order, data])
            if data == submissions[0].2 && user == "u1" && order == "o1" {
                try await Task.sleep(for: .milliseconds(10))
            }
        }
        let worker = try ChildProcess.receiptWorker(["work", "--claim-batch", "1", "--concurrency", "1"],
                                                    environment: workerEnvironment(url, simulator: simulator))
        defer { worker.signal(SIGKILL) }
        let port = try await worker.loggedPort("metrics_listening")
        let web = try LoopbackClient()
        var finished = false
        for _ in 0..<300 where !finished {
            finished = try await client.query("SELECT count(*) FROM iap.jobs WHERE state NOT IN ('done', 'failed', 'attention')")[0]
                .decode(Int.self, at: 0) == 0
            try await Task.sleep(for: .milliseconds(100))
        }
        XCTAssertTrue(finished)
        // Gauges are sampled every few seconds: wait for a sample that has seen the finished jobs.
        var text = ""
        for _ in 0..<100 {
            text = try await scrape(port)
            if text.contains(#"iap_jobs{state="attention"} 2"#) { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        let families = try StrictPrometheusParser.parse(text)
        let names = Set(families.map(\.name))
        for required in ["iap_jobs_claimed_total", "iap_jobs_finished_total", "iap_job_retries_total", "iap_jobs",
                         "iap_queue_oldest_age_seconds", "iap_apple_requests_total", "iap_apple_request_duration_seconds",
                         "iap_inflight_verifications", "iap_credits_total", "iap_alerts_open", "iap_alerts_total",
                         "iap_db_calls_total", "iap_db_connections", "iap_leader"] {
            XCTAssertTrue(names.contains(required), "missing \(required)")
        }
        XCTAssertEqual(families.first { $0.name == "iap_apple_request_duration_seconds" }?.type, "histogram")
        func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
            families.first { $0.name == name }?.samples.first { $0.name == name && $0.labels == labels }?.value
        }
        for outcome in ["credited", "already_credited", "replayed", "sandbox_rejected", "wrong_bundle", "paid_not_credited",
                        "config_error", "invalid_receipt"] {
            XCTAssertGreaterThanOrEqual(value("iap_jobs_finished_total", ["outcome": outcome]) ?? 0, 1, outcome)
        }
        XCTAssertEqual(value("iap_credits_total"), 1)
        XCTAssertEqual(value("iap_alerts_open", ["kind": "paid_not_credited"]), 1)
        XCTAssertEqual(value("iap_alerts_total", ["kind": "receipt_replay"]), 1)
        XCTAssertGreaterThanOrEqual(value("iap_job_retries_total", ["reason": "status_21002"]) ?? 0, 2)
        // The database metrics: calls by result, the pool by state, and the lease (a lone worker leads).
        XCTAssertGreaterThan(value("iap_db_calls_total", ["result": "ok"]) ?? 0, 10)
        XCTAssertEqual(value("iap_db_calls_total", ["result": "timeout"]), 0)
        let pooled = (value("iap_db_connections", ["state": "idle"]) ?? 0) + (value("iap_db_connections", ["state": "busy"]) ?? 0)
        XCTAssertGreaterThan(pooled, 0)
        XCTAssertLessThanOrEqual(pooled, 4, "DATABASE_POOL_SIZE")
        XCTAssertEqual(value("iap_leader"), 1)
        XCTAssertFalse(text.contains("ops-secret"))
        let health = try await web.send("GET", port: port, path: "/healthz")
        XCTAssertEqual(health.status, 200)
        let ready = try await web.send("GET", port: port, path: "/readyz")
        XCTAssertEqual(ready.status, 200)
        worker.signal(SIGTERM)
        _ = try await worker.wait()
        XCTAssertFalse(worker.stdout.contains("ops-secret"))
        await web.shutdown()
        await simulator.shutdown()
        await client.close()
    }

    func testReadyzIsUnreadyWhileTheDatabaseIsUnreachable() async throws {
        let simulator = AppleSimulator(configuration: AppleSimConfiguration())
        _ = try simulator.start()
        let worker = try ChildProcess.receiptWorker(["work"], environment: workerEnvironment(
            "postgresql://nobody@127.0.0.1:1/none?connect_timeout=1", simulator: simulator))
        defer { worker.signal(SIGKILL) }
        let port = try await worker.loggedPort("metrics_listening")
        let web = try LoopbackClient()
        var ready = 0
        for _ in 0..<50 {
            ready = try await web.send("GET", port: port, path: "/readyz").status
            if ready == 503 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        XCTAssertEqual(ready, 503)
        let health = try await web.send("GET", port: port, path: "/healthz")
        XCTAssertEqual(health.status, 200, "alive, just not ready")
        XCTAssertTrue(worker.isRunning, "no crash loop: it waits for the database")
        worker.signal(SIGTERM)
        let code = try await worker.wait()
        XCTAssertEqual(code, 0)
        await web.shutdown()
        await simulator.shutdown()
    }

    func testWorkerSurvivesADatabaseRestart() async throws {
        guard let cluster = try await TestDatabase.privateCluster() else { throw XCTSkip("needs the private cluster") }
        let url = try await TestDatabase.fresh()
        let client = PostgresClient(conninfo: url)
        let simulator = AppleSimulator(configuration: AppleSimConfiguration(
            sharedSecret: "ops-secret", faults: AppleSimFaults(latency: SimLatency(.milliseconds(50)))))
        _ = try simulator.start()
        let count = 2_000
        _ = try await client.query("INSERT INTO iap.orders (order_id, user_id, product_id) SELECT 'o' || n, 'u' || n, 'coins' FROM generate_series(1, $1) n", [count])
        let receipts = (1...count).map { SimReceipt(bundleID: "com.example.ops", transactions: [T(transactionID: "r\($0)", productID: "coins")]).mint() }
        _ = try await client.query("SELECT count(iap.enqueue_receipt(u, o, r)) FROM unnest($1::text[], $2::text[], $3::text[]) x(u, o, r)",
                                   [(1...count).map { "u\($0)" }, (1...count).map { "o\($0)" }, receipts])
        var environment = workerEnvironment(url, simulator: simulator)
        environment["WORKER_CONCURRENCY"] = "20"
        environment["LEASE_SECONDS"] = "5"
        let worker = try ChildProcess.receiptWorker(["work"], environment: environment)
        defer { worker.signal(SIGKILL) }
        let port = try await worker.loggedPort("metrics_listening")
        while try await client.query("SELECT count(*) FROM iap.credits")[0].decode(Int.self, at: 0) < 200 {
            try await Task.sleep(for: .milliseconds(50))
        }
        try await cluster.restart()
        var credited = 0
        for _ in 0..<600 where credited < count {
            credited = (try? await client.query("SELECT count(*) FROM iap.credits")[0].decode(Int.self, at: 0)) ?? credited
            try await Task.sleep(for: .milliseconds(100))
        }
        XCTAssertEqual(credited, count, "every receipt credited after the restart")
        XCTAssertTrue(worker.isRunning)
        let web = try LoopbackClient()
        var ready = 0
        for _ in 0..<50 {
            ready = try await web.send("GET", port: port, path: "/readyz").status
            if ready == 200 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        XCTAssertEqual(ready, 200, "ready again after the database came back")
        let leftovers = try await client.query("SELECT count(*) FROM iap.jobs WHERE state <> 'done'")[0].decode(Int.self, at: 0)
        XCTAssertEqual(leftovers, 0)
        worker.signal(SIGTERM)
        let code = try await worker.wait()
        XCTAssertEqual(code, 0, worker.stderr)
        await web.shutdown()
        await simulator.shutdown()
        await client.close()
    }

    private func scrape(_ port: Int) async throws -> String {
        let transport = try SocketHTTPTransport()
        let response = try await transport.send(HTTPClientRequest(url: URL(string: "http://127.0.0.1:\(port)/metrics")!), timeout: .seconds(10))
        await transport.shutdown()
        return String(decoding: response.body, as: UTF8.self)
    }
}

import AppleSim
import Foundation
import HTTP
import Postgres
import TestSupport
import XCTest

/// The operator's pack in docker/: alert rules with promtool unit tests, the Grafana dashboard,
/// and `promtool check metrics` against the live /metrics of a worker, an ingest process and
/// the console. promtool comes with Debian's `prometheus` package, which .ci/run installs.
final class OperatorPackTests: XCTestCase {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let docker = repository.appendingPathComponent("docker")

    private func promtool() throws -> String {
        for path in ["/usr/bin/promtool", "/usr/local/bin/promtool"] where FileManager.default.isExecutableFile(atPath: path) {
            return path
        }
        throw XCTSkip("promtool is not installed (Debian package prometheus; .ci/run installs it)")
    }

    func testAlertRulesPassTheirUnitTests() async throws {
        let promtool = try promtool()
        let check = try await ChildProcess.run([promtool, "check", "rules", Self.docker.appendingPathComponent("prometheus/rules.yml").path])
        XCTAssertEqual(check.code, 0, check.stdout + check.stderr)
        let test = try await ChildProcess.run([promtool, "test", "rules", Self.docker.appendingPathComponent("prometheus/rules_test.yml").path])
        XCTAssertEqual(test.code, 0, test.stdout + test.stderr)
    }

    func testTheDashboardShowsWhatOnCallNeeds() throws {
        let data = try Data(contentsOf: Self.docker.appendingPathComponent("grafana/dashboards/receipt-worker.json"))
        let dashboard = try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [String: Any])
        let panels = try XCTUnwrap(dashboard["panels"] as? [[String: Any]])
        let expressions = panels.flatMap { ($0["targets"] as? [[String: Any]] ?? []).compactMap { $0["expr"] as? String } }.joined(separator: "\n")
        for metric in ["iap_jobs{", "iap_queue_oldest_age_seconds", "iap_jobs_finished_total", "iap_job_retries_total",
                       "iap_apple_request_duration_seconds_bucket", "iap_apple_requests_total", "iap_alerts_open", "iap_db_calls_total"] {
            XCTAssertTrue(expressions.contains(metric), "the dashboard has no panel on \(metric)")
        }
        let compose = try String(contentsOf: Self.docker.appendingPathComponent("compose.yaml"), encoding: .utf8)
        XCTAssertTrue(compose.contains("./grafana/provisioning:/etc/grafana/provisioning"))
        XCTAssertTrue(compose.contains("./prometheus/rules.yml:/etc/prometheus/rules.yml"))
    }

    func testLiveMetricsOfWorkerIngestAndConsolePassPromtool() async throws {
        let promtool = try promtool()
        let url = try await TestDatabase.fresh()
        let simulator = AppleSimulator(configuration: AppleSimConfiguration(sharedSecret: "pack-secret"))
        _ = try simulator.start()
        let base = ["DATABASE_URL": url, "LOG_LEVEL": "info"]
        let worker = try ChildProcess.receiptWorker(["work"], environment: base.merging([
            "METRICS_LISTEN": "127.0.0.1:0", "APPLE_BUNDLE_ID": "com.example.pack", "APPLE_SHARED_SECRET": "pack-secret",
            "APPLE_VERIFY_RECEIPT_URL": simulator.productionURL.absoluteString,
            "APPLE_VERIFY_RECEIPT_SANDBOX_URL": simulator.sandboxURL.absoluteString]) { $1 })
        let ingest = try ChildProcess.receiptWorker(["ingest"], environment: base.merging(
            ["INGEST_LISTEN": "127.0.0.1:0", "INGEST_TOKEN": "pack-token-0123456789"]) { $1 })
        let console = try ChildProcess.receiptWorker(["console"], environment: base.merging(["CONSOLE_LISTEN": "127.0.0.1:0"]) { $1 })
        let processes = [worker, ingest, console]
        defer { processes.forEach { $0.signal(SIGKILL) } }
        let ports = [("worker", try await worker.loggedPort("metrics_listening")), ("ingest", try await ingest.loggedPort("ingest_started")),
                     ("console", try await console.loggedPort("console_started"))]
        let transport = try SocketHTTPTransport()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("metrics-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for (name, port) in ports {
            _ = try await transport.send(HTTPClientRequest(url: URL(string: "http://127.0.0.1:\(port)/healthz")!), timeout: .seconds(10))
            let response = try await transport.send(HTTPClientRequest(url: URL(string: "http://127.0.0.1:\(port)/metrics")!), timeout: .seconds(10))
            XCTAssertEqual(response.status, 200, name)
            let file = folder.appendingPathComponent("\(name).prom")
            try Data(response.body).write(to: file)
            let check = try await ChildProcess.run(["/bin/sh", "-c", "\"$0\" check metrics < \"$1\"", promtool, file.path])
            XCTAssertEqual(check.code, 0, "\(name): \(check.stdout)\(check.stderr)")
            if name == "console" { XCTAssertTrue(String(decoding: response.body, as: UTF8.self).contains("iap_console_requests_total")) }
        }
        await transport.shutdown()
        for process in processes { process.signal(SIGTERM) }
        for process in processes { _ = try await process.wait(timeout: 30) }
        await simulator.shutdown()
        try? FileManager.default.removeItem(at: folder)
    }

    func testConsoleAddUserStoresAnScryptHashAndSSOModeNeedsAProxy() async throws {
        let url = try await TestDatabase.fresh()
        let add = try await ChildProcess.run(["/bin/sh", "-c", "printf 'hunter2-but-longer\\n' | \"$0\" console add-user ops-anna --role support",
                                              ChildProcess.receiptWorkerPath], environment: ["DATABASE_URL": url])
        XCTAssertEqual(add.code, 0, add.stderr)
        let client = PostgresClient(conninfo: url, maxConnections: 1)
        let hash = try await client.query("SELECT password_hash FROM iap.console_users WHERE name = 'ops-anna'")[0].decode(String.self, at: 0)
        XCTAssertTrue(hash.hasPrefix("scrypt$15$8$3$"), hash)
        XCTAssertFalse(hash.contains("hunter2"))
        func console(_ arguments: String, stdin: String = "") async throws -> (code: Int32, stdout: String, stderr: String) {
            try await ChildProcess.run(["/bin/sh", "-c", "printf '\(stdin)' | \"$0\" console \(arguments)", ChildProcess.receiptWorkerPath],
                                       environment: ["DATABASE_URL": url])
        }
        let again = try await console("add-user ops-anna --role viewer", stdin: "another-long-password\\n")
        XCTAssertEqual(again.code, 2, "add-user never changes an existing user")
        XCTAssertTrue(again.stderr.contains("already a console user"), again.stderr)
        let short = try await console("add-user ops-ben --role viewer", stdin: "short\\n")
        XCTAssertEqual(short.code, 2)
        XCTAssertTrue(short.stderr.contains("12 characters"), short.stderr)
        let disable = try await console("disable-user ops-anna")
        XCTAssertEqual(disable.code, 0, disable.stderr)
        let list = try await console("list-users")
        XCTAssertEqual(list.code, 0, list.stderr)
        XCTAssertTrue(list.stdout.contains("ops-anna") && list.stdout.contains("support"), list.stdout)
        let role = try await console("set-role ops-anna --role viewer")
        XCTAssertEqual(role.code, 0, role.stderr)
        let missing = try await console("disable-user nobody")
        XCTAssertEqual(missing.code, 2)
        let badRole = try await ChildProcess.run([ChildProcess.receiptWorkerPath, "console", "add-user", "x", "--role", "admin"],
                                                 environment: ["DATABASE_URL": url])
        XCTAssertEqual(badRole.code, 2)
        let noProxy = try await ChildProcess.run([ChildProcess.receiptWorkerPath, "console"],
                                                 environment: ["DATABASE_URL": url, "CONSOLE_TRUSTED_HEADER": "X-Forwarded-Email"])
        XCTAssertEqual(noProxy.code, 2)
        XCTAssertTrue(noProxy.stderr.contains("CONSOLE_TRUSTED_PROXY"), noProxy.stderr)
        await client.close()
    }
}

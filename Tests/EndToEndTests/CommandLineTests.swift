import Foundation
import Postgres
import TestSupport
import XCTest

/// The real binary, as operators run it.
final class CommandLineTests: XCTestCase {
    let binary = ChildProcess.receiptWorkerPath

    func testMigrateFromFourProcessesAtOnceThenAgain() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        let environment = ["DATABASE_URL": url, "MIGRATIONS_DIR": TestDatabase.migrationsDirectory.path]
        let processes = try (0..<4).map { _ in try ChildProcess([binary, "migrate"], environment: environment) }
        for process in processes {
            let code = try await process.wait()
            XCTAssertEqual(code, 0, process.stderr)
        }
        let again = try await ChildProcess.run([binary, "migrate"], environment: environment)
        XCTAssertEqual(again.code, 0, again.stderr)
        XCTAssertTrue(again.stdout.contains("event=migrated applied=0"), again.stdout)
        let client = PostgresClient(conninfo: url)
        let count = try await client.query("SELECT count(*) FROM iap.schema_migrations")[0].decode(Int.self, at: 0)
        XCTAssertEqual(count, try Migrator(directory: TestDatabase.migrationsDirectory).migrations.count)
        await client.close()
    }

    func testBadInputGivesOneLineAndExitTwo() async throws {
        let url = try await TestDatabase.fresh()
        let cases: [([String], [String: String], String)] = [
            (["no-such-command"], [:], "unknown command"),
            (["status", "--no-such-flag"], ["DATABASE_URL": url], "unknown flag --no-such-flag"),
            (["status"], ["DATABASE_URL": "postgresql://u:hunter2secret@[broken"], "invalid DATABASE_URL"),
            (["status"], ["DATABASE_URL": "postgresql://u:hunter2secret@127.0.0.1:1/x?connect_timeout=2"], "DATABASE_URL: cannot connect"),
            (["migrate"], ["DATABASE_URL": url, "MIGRATIONS_DIR": "/no/such/folder"], "folder not found"),
            (["status", "--log-level", "loud"], ["DATABASE_URL": url], "invalid --log-level 'loud'"),
            (["status", "extra"], ["DATABASE_URL": url], "unexpected argument"),
            (["bench", "nemesis", "--seed", "-1"], ["DATABASE_URL": url], "invalid --seed '-1'"),
            (["bench", "nemesis", "--seed", "1e3"], ["DATABASE_URL": url], "invalid --seed '1e3'"),
            (["bench", "nemesis", "--pace", "0"], ["DATABASE_URL": url], "invalid --pace '0'"),
            (["work", "--verifier", "noop", "--metrics-listen", "off"], ["DATABASE_URL": url, "DATABASE_POOL_SIZE": "1"],
             "invalid DATABASE_POOL_SIZE '1' for work"),
        ]
        for (arguments, environment, expected) in cases {
            let result = try await ChildProcess.run([binary] + arguments, environment: environment, removing: ["DATABASE_URL"])
            XCTAssertEqual(result.code, 2, "\(arguments): \(result.stderr)")
            let lines = result.stderr.split(separator: "\n")
            XCTAssertEqual(lines.count, 1, "\(arguments): \(result.stderr)")
            XCTAssertTrue(result.stderr.contains(expected), "\(arguments): \(result.stderr)")
            XCTAssertFalse(result.stderr.contains("hunter2secret"), "a password leaked: \(result.stderr)")
        }
        let missing = try await ChildProcess.run([binary, "status"], removing: ["DATABASE_URL"])
        XCTAssertEqual(missing.code, 2)
        XCTAssertTrue(missing.stderr.contains("DATABASE_URL is not set"), missing.stderr)
    }

    func testHelpForEveryCommand() async throws {
        let overview = try await ChildProcess.run([binary, "--help"])
        XCTAssertEqual(overview.code, 0)
        let names = overview.stdout.split(separator: "\n").filter { $0.hasPrefix("  ") }.compactMap { $0.split(separator: " ").first }
        XCTAssertFalse(names.isEmpty)
        for name in names {
            let help = try await ChildProcess.run([binary, String(name), "--help"])
            XCTAssertEqual(help.code, 0, "\(name)")
            XCTAssertTrue(help.stdout.hasPrefix("usage: receipt-worker \(name)"), help.stdout)
        }
    }

    func testStatusReportsDepthAndJSON() async throws {
        let url = try await TestDatabase.fresh()
        let client = PostgresClient(conninfo: url)
        for index in 0..<3 { _ = try await client.query("SELECT iap.enqueue_receipt($1, $2, $3)", "u", "o\(index)", "QUJD") }
        _ = try await client.query("""
            INSERT INTO iap.alerts (kind, job_id, user_id, reason) VALUES ('paid_not_credited', 1, 'u', 'no_matching_order')
            """)
        await client.close()
        let text = try await ChildProcess.run([binary, "status"], environment: ["DATABASE_URL": url])
        XCTAssertEqual(text.code, 0, text.stderr)
        XCTAssertTrue(text.stdout.contains("queued=3"), text.stdout)
        XCTAssertTrue(text.stdout.contains("paid_not_credited=1"), text.stdout)
        let json = try await ChildProcess.run([binary, "status", "--json"], environment: ["DATABASE_URL": url])
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        XCTAssertEqual((object["jobs"] as? [String: Int])?["queued"], 3)
        XCTAssertEqual((object["open_alerts"] as? [String: Int])?["paid_not_credited"], 1)
        XCTAssertNotNil(object["oldest_queued_age_seconds"] as? Double)
    }
}

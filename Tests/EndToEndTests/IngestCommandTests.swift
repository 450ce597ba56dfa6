import Foundation
import HTTP
import Postgres
import TestSupport
import XCTest

/// `receipt-worker ingest`, the real binary: the HTTP API over loopback, and `--file` bulk loads.
final class IngestCommandTests: XCTestCase {
    let token = "e2e-ingest-token-" + UUID().uuidString

    func testHTTPModeCommitsAuthorizedReceiptsRefusesOthersAndStopsOnSigterm() async throws {
        let url = try await TestDatabase.fresh()
        // The token from a file, as deployments hand secrets over; the trailing newline is trimmed.
        let tokenFile = try temporaryFile(token + "\n")
        defer { try? FileManager.default.removeItem(at: tokenFile) }
        let ingest = try ChildProcess.receiptWorker(["ingest", "--listen", "127.0.0.1:0"], environment: [
            "DATABASE_URL": url, "INGEST_TOKEN_FILE": tokenFile.path, "LOG_LEVEL": "debug",
        ])
        defer { ingest.signal(SIGKILL) }
        let port = try await ingest.loggedPort("ingest_started")
        let http = try LoopbackClient()
        let receipt = #"{"user_id":"u1","order_id":"o1","receipt_data":"QUJDRA=="}"#

        let accepted = try await http.send("POST", port: port, path: "/v1/receipts", body: receipt,
                                           headers: [("Authorization", "Bearer \(token)")])
        XCTAssertEqual(accepted.status, 202, "\(accepted.json)")
        let jobID = try XCTUnwrap(accepted.json["job_id"] as? Int)
        let database = PostgresClient(conninfo: url)
        let rows = try await database.query("SELECT user_id, order_id, payload FROM iap.jobs WHERE id = $1", [jobID])
        XCTAssertEqual(rows.count, 1, "the job is committed before the 202")
        XCTAssertEqual(try rows[0].decode(String.self, at: 0), "u1")
        XCTAssertEqual(try rows[0].decode(String.self, at: 2), "QUJDRA==")

        let anonymous = try await http.send("POST", port: port, path: "/v1/receipts", body: receipt)
        XCTAssertEqual(anonymous.status, 401)
        let wrong = try await http.send("POST", port: port, path: "/v1/receipts", body: receipt,
                                        headers: [("Authorization", "Bearer not-the-token")])
        XCTAssertEqual(wrong.status, 401)
        let total = try await database.query("SELECT count(*) FROM iap.jobs")[0].decode(Int.self, at: 0)
        XCTAssertEqual(total, 1, "refused requests write nothing")

        ingest.signal(SIGTERM)
        let code = try await ingest.wait(timeout: 60)
        XCTAssertEqual(code, 0, ingest.stderr)
        XCTAssertTrue(ingest.stdout.contains("event=ingest_stopped"), ingest.stdout)
        XCTAssertFalse((ingest.stdout + ingest.stderr).contains(token), "the token leaked")
        XCTAssertFalse(ingest.stdout.contains("QUJDRA=="), "receipt data leaked")
        await http.shutdown()
        await database.close()
    }

    func testHTTPModeWithoutTokenIsOneLineAndExitTwo() async throws {
        let url = try await TestDatabase.fresh()
        let cases: [([String: String], String)] = [
            (["DATABASE_URL": url], "INGEST_TOKEN is not set"),
            (["DATABASE_URL": url, "INGEST_TOKEN_FILE": "/no/such/token"], "INGEST_TOKEN_FILE: cannot read /no/such/token"),
        ]
        for (environment, expected) in cases {
            let result = try await ChildProcess.run([ChildProcess.receiptWorkerPath, "ingest", "--listen", "127.0.0.1:0"],
                                                    environment: environment, removing: ["INGEST_TOKEN", "INGEST_TOKEN_FILE"])
            XCTAssertEqual(result.code, 2, result.stderr)
            XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, result.stderr)
            XCTAssertTrue(result.stderr.contains(expected), result.stderr)
        }
    }

    func testFileModeReportsRejectedLinesLoadsTheRestAndRerunsAsDuplicates() async throws {
        let url = try await TestDatabase.fresh()
        let good = [
            #"{"user_id":"u1","order_id":"o1","receipt_data":"QUJDRA=="}"#,
            #"{"user_id":"u5","order_id":"o5","product_id":"coins_100","receipt_data":"RUZHSA=="}"#,
            #"{"user_id":"u7","receipt_data":"SUpLTA=="}"#,
        ]
        let mixed = try temporaryFile([
            good[0],
            #"{"user_id":"u2","#,                                 // line 2: malformed JSON
            #"{"order_id":"o3","receipt_data":"QUJD"}"#,          // line 3: no user_id
            "",                                                   // line 4: blank, skipped
            good[1],
            #"{"user_id":"u6","receipt_data":"not base64!"}"#,   // line 6: not base64
            good[2],
        ].joined(separator: "\n") + "\n")
        let onlyGood = try temporaryFile(good.joined(separator: "\n") + "\n")
        defer { [mixed, onlyGood].forEach { try? FileManager.default.removeItem(at: $0) } }
        let environment = ["DATABASE_URL": url]
        let database = PostgresClient(conninfo: url)

        let first = try await ChildProcess.run([ChildProcess.receiptWorkerPath, "ingest", "--file", mixed.path], environment: environment)
        XCTAssertEqual(first.code, 1, "some lines were rejected: \(first.stderr)")
        let rejected = first.stderr.split(separator: "\n").map(String.init)
        XCTAssertEqual(rejected.map { $0.prefix(while: { $0 != ":" }) }, ["line 2", "line 3", "line 6"], first.stderr)
        XCTAssertTrue(rejected.allSatisfy { $0.count > "line N: ".count }, "each rejection has a reason")
        XCTAssertFalse(first.stderr.contains("not base64!"), "a rejection never quotes the line")
        XCTAssertTrue(first.stdout.contains("loaded=3 duplicates=0 rejected=3"), first.stdout)
        let loaded = try await database.query("SELECT user_id FROM iap.jobs ORDER BY user_id").map { try $0.decode(String.self, at: 0) }
        XCTAssertEqual(loaded, ["u1", "u5", "u7"])

        let again = try await ChildProcess.run([ChildProcess.receiptWorkerPath, "ingest", "--file", mixed.path], environment: environment)
        XCTAssertEqual(again.code, 1, again.stderr)
        XCTAssertTrue(again.stdout.contains("loaded=0 duplicates=3 rejected=3"), again.stdout)

        let clean = try await ChildProcess.run([ChildProcess.receiptWorkerPath, "ingest", "--file", onlyGood.path], environment: environment)
        XCTAssertEqual(clean.code, 0, "duplicates are not failures: \(clean.stderr)")
        XCTAssertEqual(clean.stderr, "")
        let count = try await database.query("SELECT count(*) FROM iap.jobs")[0].decode(Int.self, at: 0)
        XCTAssertEqual(count, 3, "re-runs create nothing new")
        await database.close()
    }

    func testFileModeWithUnreadableFileIsOneLineAndExitTwo() async throws {
        let url = try await TestDatabase.fresh()
        for path in ["/nonexistent/receipts.ndjson", NSTemporaryDirectory()] {
            let result = try await ChildProcess.run([ChildProcess.receiptWorkerPath, "ingest", "--file", path],
                                                    environment: ["DATABASE_URL": url])
            XCTAssertEqual(result.code, 2, result.stderr)
            XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, result.stderr)
            XCTAssertTrue(result.stderr.contains("--file: cannot read \(path)"), result.stderr)
        }
    }

    private func temporaryFile(_ contents: String) throws -> URL {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("e2e-\(UUID().uuidString)")
        try Data(contents.utf8).write(to: file)
        return file
    }
}


import Foundation
import Postgres
import TestSupport
import XCTest

/// Support's `alerts` command against a paid_not_credited alert.
final class AlertsCommandTests: XCTestCase {
    func testListCreditResolve() async throws {
        let url = try await TestDatabase.fresh()
        let client = PostgresClient(conninfo: url)
        _ = try await client.query("INSERT INTO iap.orders (order_id, user_id, product_id) VALUES ('o-help', 'buyer', 'coins_100')")
        _ = try await client.query("""
            INSERT INTO iap.alerts (kind, transaction_id, job_id, user_id, product_id, reason, details) VALUES
              ('paid_not_credited', 't-help', 7, 'buyer', 'coins_100', 'no_open_order',
               '{"quantity": "2", "environment": "Production", "original_transaction_id": "t-help"}'),
              ('receipt_replay', 't-other', 8, 'thief', 'coins_100', 'credited_to_another_user', '{}')
            """)
        let env = ["DATABASE_URL": url]
        let list = try await ChildProcess.run([ChildProcess.receiptWorkerPath, "alerts", "list", "--open", "--json"], environment: env)
        XCTAssertEqual(list.code, 0, list.stderr)
        let alerts = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [[String: Any]])
        XCTAssertEqual(alerts.count, 2)
        let id = try XCTUnwrap(alerts.first { $0["kind"] as? String == "paid_not_credited" }?["id"] as? Int)
        let replayID = try XCTUnwrap(alerts.first { $0["kind"] as? String == "receipt_replay" }?["id"] as? Int)

        let wrong = try await ChildProcess.run([ChildProcess.receiptWorkerPath, "alerts", "credit", String(replayID), "--order", "o-help"], environment: env)
        XCTAssertEqual(wrong.code, 2)
        XCTAssertTrue(wrong.stderr.contains("cannot be credited"), wrong.stderr)
        let credit = try await ChildProcess.run([ChildProcess.receiptWorkerPath, "alerts", "credit", String(id), "--order", "o-help",
                                                 "--actor", "tess"], environment: env)
        XCTAssertEqual(credit.code, 0, credit.stderr)
        XCTAssertTrue(credit.stdout.contains("credited to order o-help"), credit.stdout)
        let twice = try await ChildProcess.run([ChildProcess.receiptWorkerPath, "alerts", "credit", String(id), "--order", "o-help"], environment: env)
        XCTAssertEqual(twice.code, 2)
        XCTAssertTrue(twice.stderr.contains("already resolved"), twice.stderr)
        let ledger = try await client.query("SELECT order_id, quantity, credited_by FROM iap.credits")
        XCTAssertEqual(ledger.count, 1)
        XCTAssertEqual(try ledger[0].decode(Int.self, at: 1), 2)
        XCTAssertEqual(try ledger[0].decode(String.self, at: 2), "tess", "the ledger names the person who credited")

        let resolve = try await ChildProcess.run([ChildProcess.receiptWorkerPath, "alerts", "resolve", String(replayID), "--note", "account banned"],
                                                 environment: env)
        XCTAssertEqual(resolve.code, 0, resolve.stderr)
        // Each change from the CLI has its audit row, naming --actor or the operating system user.
        let audit = try await client.query("SELECT actor, action, target FROM iap.audit_log ORDER BY id")
            .map { "\(try $0.decode(String.self, at: 0)) \(try $0.decode(String.self, at: 1)) \(try $0.decode(String.self, at: 2))" }
        XCTAssertEqual(audit, ["tess credit alert:\(id)", "\(NSUserName()) resolve alert:\(replayID)"])
        // A paid_not_credited alert closes without crediting only with --no-credit.
        _ = try await client.query("""
            INSERT INTO iap.alerts (kind, transaction_id, job_id, user_id, product_id, reason) VALUES
              ('paid_not_credited', 't-owed', 9, 'buyer', 'coins_100', 'no_open_order')
            """)
        let owedID = try await client.query("SELECT id FROM iap.alerts WHERE transaction_id = 't-owed'")[0].decode(Int.self, at: 0)
        let unconfirmed = try await ChildProcess.run([ChildProcess.receiptWorkerPath, "alerts", "resolve", String(owedID), "--note", "gave up"],
                                                     environment: env)
        XCTAssertEqual(unconfirmed.code, 2)
        XCTAssertTrue(unconfirmed.stderr.contains("explicit confirmation"), unconfirmed.stderr)
        let confirmed = try await ChildProcess.run([ChildProcess.receiptWorkerPath, "alerts", "resolve", String(owedID), "--note", "gave up",
                                                    "--no-credit", "--actor", "tess"], environment: env)
        XCTAssertEqual(confirmed.code, 0, confirmed.stderr)
        let table = try await ChildProcess.run([ChildProcess.receiptWorkerPath, "alerts", "list"], environment: env)
        XCTAssertTrue(table.stdout.contains("resolved"), table.stdout)
        let missingNote = try await ChildProcess.run([ChildProcess.receiptWorkerPath, "alerts", "resolve", "1"], environment: env)
        XCTAssertEqual(missingNote.code, 2)
        await client.close()
    }
}

import Foundation
import Postgres
import TestSupport
import XCTest

/// `migrate` has no call deadline by default, and what the server says reaches the
/// log as `event=db_notice`, never as raw text.
final class DatabaseWordsTests: XCTestCase {
    let binary = ChildProcess.receiptWorkerPath

    /// An index whose build takes about 2 s: each of its 10 rows sleeps 0.2 s in the indexed function.
    private func slowIndexMigrations() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("slow-migrations-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try """
            CREATE TABLE slow_rows AS SELECT g AS n FROM generate_series(1, 10) AS g;
            CREATE FUNCTION slow_identity(n int) RETURNS int IMMUTABLE LANGUAGE plpgsql AS $$
            BEGIN PERFORM pg_sleep(0.2); RETURN n; END $$;
            """.write(to: folder.appendingPathComponent("0001_slow_rows.sql"), atomically: true, encoding: .utf8)
        try """
            -- migrate: no-transaction
            CREATE INDEX CONCURRENTLY slow_rows_index ON slow_rows (slow_identity(n));
            """.write(to: folder.appendingPathComponent("0002_slow_index.sql"), atomically: true, encoding: .utf8)
        return folder
    }

    func testMigrateOutlastsTheCallDeadlineUnlessToldOtherwise() async throws {
        let folder = try slowIndexMigrations()
        defer { try? FileManager.default.removeItem(at: folder) }
        let bounded = try await TestDatabase.fresh(migrated: false)
        let refused = try await ChildProcess.run([binary, "migrate"], environment: [
            "DATABASE_URL": bounded, "MIGRATIONS_DIR": folder.path, "DATABASE_CALL_TIMEOUT_SECONDS": "1",
            "MIGRATE_CALL_TIMEOUT_SECONDS": "1",
        ])
        XCTAssertNotEqual(refused.code, 0, "a 1 s migrate deadline cancels a 2 s index build")
        XCTAssertTrue((refused.stdout + refused.stderr).contains("timed out"), refused.stdout + refused.stderr)

        let unbounded = try await TestDatabase.fresh(migrated: false)
        let migrated = try await ChildProcess.run([binary, "migrate"], environment: [
            "DATABASE_URL": unbounded, "MIGRATIONS_DIR": folder.path, "DATABASE_CALL_TIMEOUT_SECONDS": "1",
        ])
        XCTAssertEqual(migrated.code, 0, migrated.stdout + migrated.stderr)
        let client = PostgresClient(conninfo: unbounded)
        let valid = try await client.query("""
            SELECT indisvalid FROM pg_index WHERE indexrelid = 'slow_rows_index'::regclass
            """)[0].decode(Bool.self, at: 0)
        XCTAssertTrue(valid, "the index was built whole, whatever DATABASE_CALL_TIMEOUT_SECONDS says")
        await client.close()
    }

    func testATerminatedSessionIsOneStructuredLineNotRawText() async throws {
        let url = try await TestDatabase.fresh()
        let worker = try ChildProcess.receiptWorker(["work"], environment: [
            "DATABASE_URL": url, "METRICS_LISTEN": "off", "APPLE_BUNDLE_ID": "com.example.words", "APPLE_SHARED_SECRET": "s",
            "APPLE_VERIFY_RECEIPT_URL": "http://127.0.0.1:9/verifyReceipt", "LOG_LEVEL": "info",
        ])
        defer { worker.signal(SIGKILL) }
        let client = PostgresClient(conninfo: url)
        let listening = try await eventually(30) {
            try await client.query("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'receipt-worker-listen'")[0]
                .decode(Int.self, at: 0) == 1
        }
        XCTAssertTrue(listening, worker.stdout)
        _ = try await client.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'receipt-worker-listen'")
        let logged = try await eventually(20) { worker.stdout.contains("event=db_notice") }
        worker.signal(SIGTERM)
        _ = try await worker.wait()
        XCTAssertTrue(logged, worker.stdout)
        let line = worker.stdout.split(separator: "\n").first { $0.contains("event=db_notice") }.map(String.init) ?? ""
        XCTAssertTrue(line.contains("severity=FATAL"), line)
        XCTAssertTrue(line.contains("terminating connection"), line)
        XCTAssertFalse(worker.stderr.contains("terminating connection"), "raw server text on stderr: \(worker.stderr)")
        XCTAssertFalse(worker.stdout.split(separator: "\n").contains { !$0.hasPrefix("ts=") }, "every stdout line is logfmt: \(worker.stdout)")
        await client.close()
    }

    func testListenThroughATransactionPoolerIsReportedOnceAndTheWorkerPolls() async throws {
        guard let bouncer = try await TestDatabase.pgBouncer(.transaction) else { throw XCTSkip("needs the private cluster") }
        let url = try await TestDatabase.fresh()
        let worker = try ChildProcess.receiptWorker(["work"], environment: [
            "DATABASE_URL": bouncer.url(replacingIn: url), "METRICS_LISTEN": "off", "APPLE_BUNDLE_ID": "com.example.words",
            "APPLE_SHARED_SECRET": "s", "APPLE_VERIFY_RECEIPT_URL": "http://127.0.0.1:9/verifyReceipt", "LOG_LEVEL": "info",
        ])
        defer { worker.signal(SIGKILL) }
        let client = PostgresClient(conninfo: url)
        _ = try await client.query("SELECT iap.enqueue_receipt('u1', 'o1', 'cmVjZWlwdA==')")
        let claimed = try await eventually(30) {
            try await client.query("SELECT attempts FROM iap.jobs")[0].decode(Int.self, at: 0) > 0
        }
        worker.signal(SIGTERM)
        _ = try await worker.wait()
        XCTAssertTrue(claimed, "the worker polls: \(worker.stdout)")
        let reports = worker.stdout.split(separator: "\n").filter { $0.contains("event=listen_behind_pooler") }
        XCTAssertEqual(reports.count, 1, worker.stdout)
        await client.close()
    }
}

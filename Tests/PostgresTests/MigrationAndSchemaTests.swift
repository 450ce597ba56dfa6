import Foundation
import Postgres
import TestSupport
import XCTest

final class MigrationAndSchemaTests: XCTestCase {
    func testMigrateTwiceIsANoOp() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        let migrator = try Migrator(directory: TestDatabase.migrationsDirectory)
        let connection = try await PostgresConnection.connect(url)
        let first = try await migrator.migrate(connection)
        XCTAssertEqual(first, migrator.migrations.map(\.version))
        let second = try await migrator.migrate(connection)
        XCTAssertEqual(second, [])
        let recorded = try await connection.query("SELECT count(*) FROM iap.schema_migrations")[0].decode(Int.self, at: 0)
        XCTAssertEqual(recorded, migrator.migrations.count)
        await connection.close()
    }

    func testConcurrentMigrationsApplyEachOnce() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        let migrator = try Migrator(directory: TestDatabase.migrationsDirectory)
        let applied = try await withThrowingTaskGroup(of: [Int].self) { group in
            for _ in 0..<4 {
                group.addTask {
                    let connection = try await PostgresConnection.connect(url)
                    let versions = try await migrator.migrate(connection)
                    await connection.close()
                    return versions
                }
            }
            var all: [Int] = []
            for try await versions in group { all += versions }
            return all
        }
        XCTAssertEqual(applied.sorted(), migrator.migrations.map(\.version))
    }

    func testChangedMigrationIsRefused() async throws {
        let url = try await TestDatabase.fresh()
        var migrations = try Migrator(directory: TestDatabase.migrationsDirectory).migrations
        let first = migrations[0]
        migrations[0] = Migration(version: first.version, name: first.name, sql: first.sql + "\nSELECT 1;")
        let connection = try await PostgresConnection.connect(url)
        do {
            try await Migrator(migrations: migrations).migrate(connection)
            XCTFail("expected the edited migration to be refused")
        } catch let error as MigrationError {
            XCTAssertTrue(error.description.contains("changed"))
        }
        await connection.close()
    }

    /// Comments and blank lines outside quoted text are not part of the checksum; inside a
    /// function body they are, as is the no-transaction marker.
    func testChecksumIgnoresCommentsOutsideQuotedText() {
        func checksum(_ sql: String) -> String { Migration(version: 1, name: "m", sql: sql).checksum }
        let plain = checksum("CREATE TABLE t (a int);\nCREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$\n    SELECT 1\n$$;\n")
        XCTAssertEqual(checksum("""
            -- A header, reworded.
            -- On two lines.

            CREATE TABLE t (a int);   -- a trailing comment
            -- between statements
            CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$
                SELECT 1
            $$;

            """), plain)
        XCTAssertNotEqual(checksum("CREATE TABLE t (a int);\nCREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$\n    -- body\n    SELECT 1\n$$;\n"),
                          plain, "a comment inside a function body is part of the function")
        XCTAssertNotEqual(checksum("CREATE TABLE t (a int, b text DEFAULT '-- not a comment');"),
                          checksum("CREATE TABLE t (a int, b text DEFAULT '');"))
        XCTAssertNotEqual(checksum(Migration.noTransactionMarker + "\nCREATE TABLE t (a int);"), checksum("CREATE TABLE t (a int);"))
    }

    func testACommentEditIsAccepted() async throws {
        let url = try await TestDatabase.fresh()
        var migrations = try Migrator(directory: TestDatabase.migrationsDirectory).migrations
        let first = migrations[0]
        migrations[0] = Migration(version: first.version, name: first.name, sql: "-- reworded\n" + first.sql + "\n-- edited\n")
        let connection = try await PostgresConnection.connect(url)
        let applied = try await Migrator(migrations: migrations).migrate(connection)
        XCTAssertEqual(applied, [])
        await connection.close()
    }

    func testMissingOrMalformedMigrationsFolder() throws {
        XCTAssertThrowsError(try Migrator(directory: URL(fileURLWithPath: "/nonexistent-migrations"))) { error in
            XCTAssertTrue("\(error)".contains("not found"))
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("mig-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try "SELECT 1".write(to: folder.appendingPathComponent("first.sql"), atomically: true, encoding: .utf8)
        XCTAssertThrowsError(try Migrator(directory: folder)) { XCTAssertTrue("\($0)".contains("NNNN_name.sql")) }
    }

    func testEnqueueIsIdempotentAndRejectsOnlyEmptyArguments() async throws {
        let client = PostgresClient(conninfo: try await TestDatabase.fresh())
        func enqueue(_ user: String?, _ order: String?, _ receipt: String?) async throws -> Int {
            try await client.query("SELECT iap.enqueue_receipt($1, $2, $3)", [user, order, receipt])[0].decode(Int.self, at: 0)
        }
        let first = try await enqueue("u1", "o1", "AAAA")
        let resubmitted = try await enqueue("u1", "o1", "AAAA")
        XCTAssertEqual(resubmitted, first)
        let newOrder = try await enqueue("u1", "o2", "AAAA")
        XCTAssertNotEqual(newOrder, first, "same receipt, new order: a new job (judged by the worker)")
        let otherUser = try await enqueue("u2", "o1", "AAAA")
        XCTAssertNotEqual(otherUser, first)
        // Length-prefixed keys: shifting text between user and order is another job.
        let shifted = try await enqueue("u1o", "1", "AAAA")
        XCTAssertNotEqual(shifted, first)
        // Garbage payload is accepted; the worker records the outcome.
        _ = try await enqueue("u1", nil, "not base64 at all!")
        for bad in [("", "o", "AAAA"), ("u", "o", ""), (nil, "o", "AAAA")] as [(String?, String?, String?)] {
            do {
                _ = try await enqueue(bad.0, bad.1, bad.2)
                XCTFail("expected \(bad) to be rejected")
            } catch let error as PostgresError {
                XCTAssertEqual(error.sqlState, "22023")
            }
        }
        let transaction = try await client.query("SELECT iap.enqueue_transaction($1, $2, $3)", "u1", "o1", "eyJ.x.y")[0].decode(Int.self, at: 0)
        let again = try await client.query("SELECT iap.enqueue_transaction($1, $2, $3)", "u1", "o1", "eyJ.x.y")[0].decode(Int.self, at: 0)
        XCTAssertEqual(transaction, again)
        let notification = try await client.query("SELECT iap.enqueue_notification($1)", "eyJ.n.s")[0].decode(Int.self, at: 0)
        let kinds = try await client.query("SELECT kind, user_id, state FROM iap.jobs WHERE id = $1", notification)
        XCTAssertEqual(try kinds[0].decode(String.self, at: 0), "notification")
        XCTAssertNil(try kinds[0].decode(String?.self, at: 1))
        XCTAssertEqual(try kinds[0].decode(String.self, at: 2), "queued")
        await client.close()
    }

    func testConcurrentDuplicateEnqueuesReturnOneJob() async throws {
        let url = try await TestDatabase.fresh()
        let client = PostgresClient(conninfo: url, maxConnections: 8)
        let ids = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<32 {
                group.addTask {
                    try await client.query("SELECT iap.enqueue_receipt($1, $2, $3)", "same", "order", "UkVDRUlQVA==")[0].decode(Int.self, at: 0)
                }
            }
            var all = Set<Int>()
            for try await id in group { all.insert(id) }
            return all
        }
        XCTAssertEqual(ids.count, 1)
        await client.close()
    }

    /// A batch is written as one set: one row back per input in order, a duplicate inside the
    /// batch or of an earlier job gets the first job's id and `created` false, every new job is
    /// queued and in the ready set, and one bad row refuses the whole batch.
    func testABatchEnqueueAnswersEveryRowInOrder() async throws {
        let client = PostgresClient(conninfo: try await TestDatabase.fresh())
        let earlier = try await client.query("SELECT iap.enqueue_receipt('u0', 'o0', 'QUFBQQ==')")[0].decode(Int.self, at: 0)
        func batch(_ users: [String?], _ orders: [String?], _ payloads: [String]) async throws -> [(ordinal: Int, id: Int, created: Bool)] {
            try await client.query("SELECT ordinal, job_id, created FROM iap.enqueue_jobs($1, $2, $3, $4, $5)", [
                users.map { _ in "receipt" }, users, orders, users.map { _ in String?.none }, payloads,
            ]).map { (try $0.decode(at: 0), try $0.decode(at: 1), try $0.decode(at: 2)) }
        }
        let rows = try await batch(["u1", "u0", "u1", "u2"], ["o1", "o0", "o1", nil], ["QkJCQg==", "QUFBQQ==", "QkJCQg==", "Q0NDQw=="])
        XCTAssertEqual(rows.map(\.ordinal), [1, 2, 3, 4])
        XCTAssertEqual(rows.map(\.created), [true, false, false, true])
        XCTAssertEqual(rows[1].id, earlier)
        XCTAssertEqual(rows[2].id, rows[0].id)
        let ready = try await client.query("SELECT count(*) FROM iap.job_ready WHERE id = ANY($1)", [[rows[0].id, rows[3].id]])[0].decode(Int.self, at: 0)
        XCTAssertEqual(ready, 2)
        do {
            _ = try await batch(["u3", ""], ["o3", "o4"], ["RERERA==", "RUVFRQ=="])
            XCTFail("a batch with an empty user id was accepted")
        } catch let error as PostgresError {
            XCTAssertEqual(error.sqlState, "22023")
        }
        let partial = try await client.query("SELECT count(*) FROM iap.jobs WHERE user_id = 'u3'")[0].decode(Int.self, at: 0)
        XCTAssertEqual(partial, 0)
        await client.close()
    }


    /// Every enqueue computes the dedup key per row: the function is inlined into the calling
    /// statement (an expression, not a query run per row) and still gives the same key.
    func testTheDedupKeyIsInlinedAndUnchanged() async throws {
        let client = PostgresClient(conninfo: try await TestDatabase.fresh())
        let plan = try await client.query("EXPLAIN VERBOSE SELECT iap.job_dedup_key('receipt', u, u, 'QUFBQQ==') FROM unnest(ARRAY['a', NULL]) AS u")
            .map { try $0.decode(String.self, at: 0) }.joined(separator: "\n")
        XCTAssertTrue(plan.contains("sha256("), "the dedup key was not inlined:\n\(plan)")
        let key = try await client.query("SELECT encode(iap.job_dedup_key('receipt', 'u1', NULL, 'QUFBQQ=='), 'hex')")[0].decode(String.self, at: 0)
        let expected = try await client.query("SELECT encode(sha256(convert_to('receipt:2:u1:-1::QUFBQQ==', 'UTF8')), 'hex')")[0].decode(String.self, at: 0)
        XCTAssertEqual(key, expected)
        await client.close()
    }

    /// Migration 0038: no row trigger on the queue's table. Any row trigger on UPDATE, whatever
    /// its WHEN, makes PostgreSQL fetch the old version of every row a claim or completion updates.
    /// Migration 0039: no INSERT trigger either (new jobs are placed by the statements that insert
    /// them); only the DELETE statement trigger is left.
    func testTheQueueTableHasNoRowTriggers() async throws {
        let client = PostgresClient(conninfo: try await TestDatabase.fresh())
        let triggers = try await client.query("""
            SELECT tgname || CASE WHEN (tgtype & 1) = 1 THEN ' (row)' ELSE ' (statement)' END
            FROM pg_trigger WHERE tgrelid = 'iap.job_queue'::regclass AND NOT tgisinternal ORDER BY tgname
            """).map { try $0.decode(String.self, at: 0) }
        XCTAssertEqual(triggers, ["jobs_deleted (statement)"])
        await client.close()
    }

    /// Migration 0040: the enqueue function plans its statements once per session, even on our
    /// sessions that plan every top-level statement afresh, and still finds a duplicate by its key.
    func testTheEnqueueFunctionReusesItsPlans() async throws {
        let client = PostgresClient(conninfo: try await TestDatabase.fresh(), maxConnections: 1)
        let settings = try await client.query("""
            SELECT array_to_string(proconfig, ' ') FROM pg_proc WHERE oid = 'iap.enqueue_jobs(text[], text[], text[], text[], text[])'::regprocedure
            """)[0].decode(String.self, at: 0)
        XCTAssertEqual(settings, "plan_cache_mode=force_generic_plan enable_seqscan=off")
        let enqueue = "SELECT job_id, created FROM iap.enqueue_jobs($1::text[], $2::text[], $3::text[], $4::text[], $5::text[])"
        var first: [Int] = []
        for round in 0..<7 { // past the five runs after which PostgreSQL would settle on its own
            let rows = try await client.query(enqueue, [["receipt", "receipt"], ["u", "u"], ["o1", "o2"], [String?.none, nil], ["QUFBQQ==", "QkJCQg=="]])
            let ids = try rows.map { try $0.decode(Int.self, at: 0) }
            let created = try rows.map { try $0.decode(Bool.self, at: 1) }
            if round == 0 { first = ids }
            XCTAssertEqual(ids, first, "round \(round): the same two jobs")
            XCTAssertEqual(created, round == 0 ? [true, true] : [false, false], "round \(round)")
        }
        await client.close()
    }
    /// Completion finds its jobs by lease holder alone; the schema guarantees that a lease
    /// means 'running' and 'running' means a lease.
    func testALeaseExistsExactlyWhileAJobRuns() async throws {
        let client = PostgresClient(conninfo: try await TestDatabase.fresh(), maxConnections: 1)
        let id = try await client.query("SELECT iap.enqueue_receipt('u', 'o', 'UkVDRUlQVA==')")[0].decode(Int.self, at: 0)
        for (sql, label) in [
            ("UPDATE iap.jobs SET state = 'running' WHERE id = $1", "running without a lease"),
            ("UPDATE iap.jobs SET leased_by = 'w', lease_expires_at = now() WHERE id = $1", "a lease while queued"),
            ("UPDATE iap.jobs SET state = 'running', leased_by = 'w' WHERE id = $1", "a lease without an expiry"),
        ] {
            do {
                _ = try await client.query(sql, [id])
                XCTFail("\(label) must be refused")
            } catch let error as PostgresError {
                XCTAssertEqual(error.sqlState, "23514", label)
            }
        }
        let leased = try await client.query(
            "UPDATE iap.jobs SET state = 'running', leased_by = 'w', lease_expires_at = now() WHERE id = $1", [id])
        XCTAssertEqual(leased.affectedRows, 1)
        await client.close()
    }
}

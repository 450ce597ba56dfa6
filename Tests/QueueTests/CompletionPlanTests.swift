import Foundation
import Postgres
@testable import Queue
import TestSupport
import XCTest

/// The completion's cost follows its batch, whatever the statistics say. Analyzed while every
/// job was queued, PostgreSQL believes no job is leased; a completion that joined its batch
/// (`unnest(…)`) would then rescan the batch for every leased job: quadratic.
final class CompletionPlanTests: XCTestCase {
    func testTheCompletionFindsItsJobsByPrimaryKeyWhateverTheStatistics() async throws {
        let url = try await TestDatabase.fresh()
        let connection = try await PostgresConnection.connect(url)
        try await connection.insertReceiptJobs(20000)
        try await connection.execute(script: "ANALYZE iap.job_queue, iap.job_requests")
        _ = try await connection.query("""
            UPDATE iap.jobs SET state = 'running', attempts = 1, leased_by = 'w', lease_expires_at = now() + interval '1 hour'
            """)
        let ids = try await connection.query("SELECT id FROM iap.jobs ORDER BY id DESC LIMIT 1000").map { try $0.decode(Int.self, at: 0) }
        let rows = ids.map { CompletionRow(id: $0, state: "done", outcome: "credited", delaySeconds: nil, appleStatus: 0, error: nil,
                                           transactionIDs: ["t\($0)"]) }
        let store = QueueStore(client: PostgresClient(conninfo: url))
        let completion = try XCTUnwrap(store.completionStatement(rows, workerID: "w", witness: UUID()))
        let plan = try await connection.transaction { tx in
            try await tx.pipeline([completion.explained()])[0].map { try $0.decode(String.self, at: 0) }
        }.joined(separator: "\n")
        XCTAssertTrue(plan.contains("jobs_pkey"), plan)
        XCTAssertFalse(plan.contains("Nested Loop"), plan)
        XCTAssertFalse(plan.contains("Seq Scan on jobs"), plan)
        // And it writes what it should, each row its own values.
        let written = try await connection.transaction { tx in try await tx.pipeline([completion])[0] }
        XCTAssertEqual(try QueueStore.written(written).count, 1000)
        XCTAssertEqual(try QueueStore.written(written).lost, [])
        let sample = try await connection.query("SELECT state, outcome, transaction_ids, leased_by FROM iap.jobs WHERE id = $1", [ids[17]])[0]
        XCTAssertEqual(try sample.decode(String.self, at: 0), "done")
        XCTAssertEqual(try sample.decode(String.self, at: 1), "credited")
        XCTAssertEqual(try sample.decode([String].self, at: 2), ["t\(ids[17])"])
        XCTAssertNil(try sample.decode(String?.self, at: 3))
        await store.client.close()
        await connection.close()
    }

    /// Rows sharing their values share one entry of the statement's value arrays: each row still
    /// gets its own state, outcome, delay, Apple status, error and transactions.
    func testRowsWithSharedAndOwnValuesEachGetTheirOwn() async throws {
        let url = try await TestDatabase.fresh()
        let connection = try await PostgresConnection.connect(url)
        try await connection.insertReceiptJobs(9)
        _ = try await connection.query("""
            UPDATE iap.jobs SET state = 'running', attempts = 1, apple_status = 7, leased_by = 'w', lease_expires_at = now() + interval '1 hour'
            """)
        let ids = try await connection.query("SELECT id FROM iap.jobs ORDER BY id").map { try $0.decode(Int.self, at: 0) }
        func row(_ index: Int) -> CompletionRow {
            switch index % 3 {
            case 0: CompletionRow(id: ids[index], state: "done", outcome: "acknowledged", delaySeconds: nil, appleStatus: nil, error: nil, transactionIDs: [])
            case 1: CompletionRow(id: ids[index], state: "retrying", outcome: nil, delaySeconds: 3_600, appleStatus: 21_005, error: "apple busy", transactionIDs: [])
            default: CompletionRow(id: ids[index], state: "done", outcome: "credited", delaySeconds: nil, appleStatus: 0, error: nil,
                                   transactionIDs: ["t\(index)", "x"])
            }
        }
        let store = QueueStore(client: PostgresClient(conninfo: url))
        let completion = try XCTUnwrap(store.completionStatement((0..<9).reversed().map(row), workerID: "w", witness: UUID()))
        let written = try await connection.transaction { tx in try await tx.pipeline([completion])[0] }
        XCTAssertEqual(try QueueStore.written(written).count, 9)
        for index in 0..<9 {
            let job = try await connection.query("""
                SELECT state, outcome, run_at > now() + interval '30 minutes', apple_status, last_error, transaction_ids, leased_by IS NULL
                FROM iap.jobs WHERE id = $1
                """, [ids[index]])[0]
            let expected = row(index)
            XCTAssertEqual(try job.decode(String.self, at: 0), expected.state, "job \(index)")
            XCTAssertEqual(try job.decode(String?.self, at: 1), expected.outcome, "job \(index)")
            XCTAssertEqual(try job.decode(Bool.self, at: 2), expected.delaySeconds != nil, "job \(index)")
            XCTAssertEqual(try job.decode(Int.self, at: 3), expected.appleStatus ?? 7, "job \(index): no Apple status keeps the last one")
            XCTAssertEqual(try job.decode(String?.self, at: 4), expected.error, "job \(index)")
            XCTAssertEqual(try job.decode([String].self, at: 5), expected.transactionIDs, "job \(index)")
            XCTAssertTrue(try job.decode(Bool.self, at: 6), "job \(index)")
        }
        await connection.close()
    }

    /// `iap.complete_done_jobs` (migration 0042) holds a copy of the completion's UPDATE: a batch of
    /// `done` results of every shape comes out of it as out of the completion statement, with
    /// the same finish counts, reply and witness. A batch of one combination of values without
    /// transaction ids is written with them as constants (migration 0043); any other by the copy.
    func testTheDoneFunctionWritesWhatTheCompletionStatementWrites() async throws {
        let mixed = try await doneFunctionAndStatementWrite { id, index in
            switch index % 3 {
            case 0: CompletionRow(id: id, state: "done", outcome: "acknowledged", delaySeconds: nil, appleStatus: nil, error: nil, transactionIDs: [])
            case 1: CompletionRow(id: id, state: "done", outcome: "already_credited", delaySeconds: nil, appleStatus: 0,
                                  error: "t\(index):already_credited", transactionIDs: ["t\(index)"])
            default: CompletionRow(id: id, state: "done", outcome: "credited", delaySeconds: nil, appleStatus: 0, error: nil,
                                   transactionIDs: ["t\(index)", "x"])
            }
        }
        XCTAssertEqual(mixed.jobs[1][4], "t1:already_credited")
        XCTAssertEqual(mixed.finishes, [["done", "acknowledged", "6", "3"], ["done", "already_credited", "6", "3"], ["done", "credited", "6", "3"]])

        // One combination, no transaction ids: the constants' branch. No Apple status keeps the last one.
        let keepsStatus = try await doneFunctionAndStatementWrite { id, _ in
            CompletionRow(id: id, state: "done", outcome: "acknowledged", delaySeconds: nil, appleStatus: nil, error: nil, transactionIDs: [])
        }
        XCTAssertEqual(keepsStatus.jobs[0][3], "7")
        XCTAssertEqual(keepsStatus.jobs[0][5], "{}")
        XCTAssertEqual(keepsStatus.finishes, [["done", "acknowledged", "18", "9"]])
        let ownStatus = try await doneFunctionAndStatementWrite { id, _ in
            CompletionRow(id: id, state: "done", outcome: "invalid_receipt", delaySeconds: nil, appleStatus: 21_002, error: "malformed", transactionIDs: [])
        }
        XCTAssertEqual(ownStatus.jobs[0][3], "21002")
        XCTAssertEqual(ownStatus.jobs[0][4], "malformed")

        // One combination with transaction ids: each row its own, by the copy.
        let credited = try await doneFunctionAndStatementWrite { id, index in
            CompletionRow(id: id, state: "done", outcome: "credited", delaySeconds: nil, appleStatus: 0, error: nil, transactionIDs: ["t\(index)"])
        }
        XCTAssertEqual(credited.jobs[2][5], "{t2}")
    }

    /// Nine jobs completed by `iap.complete_done_jobs` (given in reverse order) and the next nine
    /// with the same results by the completion statement, on a fresh database; asserts that both
    /// halves were written alike. Returns the jobs' written columns and the finish counts.
    private func doneFunctionAndStatementWrite(_ row: (_ id: Int, _ index: Int) -> CompletionRow) async throws
        -> (jobs: [[String?]], finishes: [[String?]]) {
        let url = try await TestDatabase.fresh()
        let connection = try await PostgresConnection.connect(url)
        try await connection.insertReceiptJobs(18)
        _ = try await connection.query("""
            UPDATE iap.jobs SET state = 'running', attempts = 1 + (id % 2)::int, apple_status = 7, leased_by = 'w',
                lease_expires_at = now() + interval '1 hour'
            """)
        let claimed = try await connection.query("SELECT id, attempts, ctid FROM iap.job_queue ORDER BY id")
        let ids = try claimed.map { try $0.decode(Int.self, at: 0) }
        let attempts = try claimed.map { try $0.decode(Int.self, at: 1) }
        let versions = try claimed.map { try $0.decode(PostgresTID.self, at: 2) }
        let store = QueueStore(client: PostgresClient(conninfo: url))
        let byFunction = try XCTUnwrap(store.doneCompletionStatement((0..<9).reversed().map { row(ids[$0], $0) },
                                                                     attempts: (0..<9).reversed().map { attempts[$0] },
                                                                     rowVersions: (0..<9).reversed().map { versions[$0] }, workerID: "w",
                                                                     witness: UUID()))
        let byStatement = try XCTUnwrap(store.completionStatement((0..<9).map { row(ids[$0 + 9], $0) }, workerID: "w", witness: UUID()))
        let replies = try await connection.transaction(planning: .reused) { tx in
            [try await tx.pipeline([byFunction])[0], try await tx.pipeline([byStatement])[0]]
        }
        XCTAssertEqual(try QueueStore.written(replies[0]).count, 9)
        XCTAssertEqual(try QueueStore.written(replies[0]).lost, [])
        XCTAssertEqual(try QueueStore.written(replies[1]).count, 9)
        let jobs = try await connection.query("""
            SELECT state, outcome, run_at <= now(), apple_status, last_error, transaction_ids, finished_at IS NOT NULL, leased_by IS NULL,
                   lease_expires_at IS NULL
            FROM iap.jobs ORDER BY id
            """).map { $0.cells }
        for index in 0..<9 {
            XCTAssertEqual(jobs[index], jobs[index + 9], "job \(index)")
        }
        let finishes = try await connection.query("""
            SELECT state, outcome, sum(jobs)::int, sum(retried)::int FROM iap.job_finishes GROUP BY 1, 2 ORDER BY 2
            """).map { $0.cells }
        let witnesses = try await connection.query("SELECT lost_ids FROM iap.commit_witness").map { try $0.decode([Int].self, at: 0) }
        XCTAssertEqual(witnesses, [[], []])
        await store.client.close()
        await connection.close()
        return (jobs, finishes)
    }

    /// The function finds its rows by the row versions it is given, but writes only the batch's
    /// own jobs still leased to the worker: addresses of other jobs write nothing, their order
    /// does not matter, and a row written since its address was read is not found, so the
    /// whole call writes nothing (RWL01) and the batch is left to the completion statement.
    func testTheDoneFunctionWritesOnlyTheBatchsOwnRowsWhateverAddressesItIsGiven() async throws {
        let url = try await TestDatabase.fresh()
        let connection = try await PostgresConnection.connect(url)
        try await connection.insertReceiptJobs(4)
        _ = try await connection.query("UPDATE iap.jobs SET state = 'running', attempts = 1, leased_by = 'w', lease_expires_at = now() + interval '1 hour'")
        let claimed = try await connection.query("SELECT id, ctid FROM iap.job_queue ORDER BY id")
        let ids = try claimed.map { try $0.decode(Int.self, at: 0) }
        let versions = try claimed.map { try $0.decode(PostgresTID.self, at: 1) }
        let store = QueueStore(client: PostgresClient(conninfo: url))
        func done(_ indexes: [Int], at addresses: [Int]) throws -> PostgresStatement {
            try XCTUnwrap(store.doneCompletionStatement(
                indexes.map { CompletionRow(id: ids[$0], state: "done", outcome: "acknowledged", delaySeconds: nil, appleStatus: nil, error: nil, transactionIDs: []) },
                attempts: indexes.map { _ in 1 }, rowVersions: addresses.map { versions[$0] }, workerID: "w", witness: UUID()))
        }
        func refused(_ statement: PostgresStatement) async throws -> String? {
            do {
                _ = try await connection.transaction { tx in try await tx.pipeline([statement]) }
                return nil
            } catch let error as PostgresError {
                return error.sqlState
            }
        }
        func states() async throws -> [String] {
            try await connection.query("SELECT state FROM iap.job_queue ORDER BY id").map { try $0.decode(String.self, at: 0) }
        }
        XCTAssertNil(store.doneCompletionStatement([CompletionRow(id: ids[0], state: "done", outcome: "acknowledged", delaySeconds: nil, appleStatus: nil,
                                                                  error: nil, transactionIDs: [])],
                                                   attempts: [1], rowVersions: [nil], workerID: "w", witness: UUID()),
                     "a row whose version is not known goes to the completion statement")

        // Jobs 0 and 1 at the addresses of jobs 2 and 3 (leased to the same worker): nothing written.
        let misaddressed = try await refused(try done([0, 1], at: [2, 3]))
        XCTAssertEqual(misaddressed, QueueStore.leaseLostState)
        let afterMisaddressed = try await states()
        XCTAssertEqual(afterMisaddressed, ["running", "running", "running", "running"])

        // Their own addresses in another order: both written.
        let swapped = try await refused(try done([1, 0], at: [0, 1]))
        XCTAssertNil(swapped)
        let afterSwapped = try await states()
        XCTAssertEqual(afterSwapped, ["done", "done", "running", "running"])

        // Job 2's row written since its address was read (still leased here): not found there, so
        // nothing is written; the completion statement, by key, writes both.
        _ = try await connection.query("UPDATE iap.job_queue SET sweeps = sweeps WHERE id = $1", [ids[2]])
        let moved = try await refused(try done([2, 3], at: [2, 3]))
        XCTAssertEqual(moved, QueueStore.leaseLostState)
        let afterMoved = try await states()
        XCTAssertEqual(afterMoved, ["done", "done", "running", "running"])
        let byKey = try XCTUnwrap(store.completionStatement([2, 3].map {
            CompletionRow(id: ids[$0], state: "done", outcome: "acknowledged", delaySeconds: nil, appleStatus: nil, error: nil, transactionIDs: [])
        }, workerID: "w", witness: UUID()))
        let reply = try await connection.transaction { tx in try await tx.pipeline([byKey])[0] }
        XCTAssertEqual(try QueueStore.written(reply).count, 2)
        let afterByKey = try await states()
        XCTAssertEqual(afterByKey, ["done", "done", "done", "done"])
        await connection.close()
    }

    /// The witness names the jobs a committed completion did not write (their lease had passed
    /// on), none when it wrote the whole batch; a token fenced before its transaction committed
    /// is a tombstone, and that transaction can no longer commit.
    func testTheWitnessNamesTheJobsTheBatchDidNotWrite() async throws {
        let url = try await TestDatabase.fresh()
        let connection = try await PostgresConnection.connect(url)
        try await connection.insertReceiptJobs(6)
        _ = try await connection.query("""
            UPDATE iap.jobs SET state = 'running', attempts = 1, leased_by = CASE WHEN id % 3 = 0 THEN 'other' ELSE 'w' END,
                lease_expires_at = now() + interval '1 hour'
            """)
        let ids = try await connection.query("SELECT id FROM iap.jobs ORDER BY id").map { try $0.decode(Int.self, at: 0) }
        let store = QueueStore(client: PostgresClient(conninfo: url))
        func done(_ ids: [Int]) -> [CompletionRow] {
            ids.map { CompletionRow(id: $0, state: "done", outcome: "acknowledged", delaySeconds: nil, appleStatus: nil, error: nil, transactionIDs: []) }
        }
        let mine = ids.filter { $0 % 3 != 0 }
        let whole = UUID(), partial = UUID(), fenced = UUID()
        _ = try await connection.transaction { tx in try await tx.pipeline([try XCTUnwrap(store.completionStatement(done(Array(mine.prefix(2))), workerID: "w", witness: whole))]) }
        let batch = Array(ids.dropFirst(2)) // two of them leased to 'other'
        let partialRow = try await connection.transaction { tx in try await tx.pipeline([try XCTUnwrap(store.completionStatement(done(batch), workerID: "w", witness: partial))]) }
        // The completion's own row says the same: how many it wrote, and which it did not.
        let written = try QueueStore.written(partialRow[0])
        XCTAssertEqual(written.count, batch.count - 2)
        XCTAssertEqual(Set(written.lost), Set(batch.filter { $0 % 3 == 0 }))
        let wholeResolution = try await store.resolveCommit(witness: whole)
        let partialResolution = try await store.resolveCommit(witness: partial)
        XCTAssertEqual(wholeResolution, .committed(lostIDs: []))
        XCTAssertEqual(partialResolution, .committed(lostIDs: Set(batch.filter { $0 % 3 == 0 })))
        let fencedResolution = try await store.resolveCommit(witness: fenced)
        let again = try await store.resolveCommit(witness: fenced)
        XCTAssertEqual(fencedResolution, .rolledBack)
        XCTAssertEqual(again, .rolledBack, "a tombstone stays a tombstone")
        do {
            let late = try XCTUnwrap(store.completionStatement(done([ids[0]]), workerID: "other", witness: fenced))
            _ = try await connection.transaction { tx in try await tx.pipeline([late]) }
            XCTFail("a fenced transaction committed")
        } catch is PostgresError {}
        await store.client.close()
        await connection.close()
    }
}

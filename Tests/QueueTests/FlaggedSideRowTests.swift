import Postgres
@testable import Queue
import TestSupport
import XCTest

/// A job's side row (migrations 0029, 0032, 0038) follows the job: its state, and the Apple
/// transactions an attention job was paid and not credited for, whoever changes them: the
/// worker's own statements, an edit through the iap.jobs view (at once), or an edit straight in
/// iap.job_queue (by the leader's stray search).
final class FlaggedSideRowTests: XCTestCase {
    func testTheOwedTransactionsFollowTheJobUntilItLeavesAttention() async throws {
        let fixture = try await QueueFixture.make()
        try await fixture.enqueue(1)
        let id = try await fixture.client.query("SELECT id FROM iap.job_queue")[0].decode(Int.self, at: 0)
        let side = { try await Self.flagged(fixture.client, id) }
        _ = try await fixture.client.query("""
            UPDATE iap.jobs SET state = 'attention', outcome = 'paid_not_credited', transaction_ids = '{t1}', finished_at = now()
            WHERE id = $1
            """, [id])
        let entered = try await side()
        XCTAssertEqual(entered, ["attention [\"t1\"]"])
        let ready = try await fixture.client.query("SELECT count(*)::bigint FROM iap.job_ready")[0].decode(Int.self, at: 0)
        XCTAssertEqual(ready, 0, "it left the ready set")
        // Support adds a transaction Apple reported later, without touching the state.
        _ = try await fixture.client.query("UPDATE iap.jobs SET transaction_ids = '{t1,t2}' WHERE id = $1", [id])
        let amended = try await side()
        XCTAssertEqual(amended, ["attention [\"t1\", \"t2\"]"])
        _ = try await fixture.client.query("UPDATE iap.jobs SET outcome = 'invalid_receipt', state = 'failed' WHERE id = $1", [id])
        let failed = try await side()
        XCTAssertEqual(failed, ["failed []"], "owes nothing: not paid_not_credited")
        _ = try await fixture.client.query("UPDATE iap.jobs SET state = 'done', outcome = 'credited' WHERE id = $1", [id])
        let done = try await side()
        XCTAssertEqual(done, [], "a job left the flagged states by hand through the view: its side row went with it")
        await fixture.client.close()
    }

    /// A job moved straight in iap.job_queue has no trigger to place it: the stray search does,
    /// and a job set back to `queued` there is claimed after it.
    func testTheStraySearchPlacesJobsMovedStraightInTheTable() async throws {
        let fixture = try await QueueFixture.make()
        try await fixture.enqueue(3)
        let ids = try await fixture.client.query("SELECT id FROM iap.job_queue ORDER BY id").map { try $0.decode(Int.self, at: 0) }
        let untouched = try await fixture.store.placeStrayJobs()
        XCTAssertEqual(untouched, 0, "enqueued jobs are in the ready set already")
        let claimed = try await fixture.store.claim(limit: 10, workerID: "w", leaseSeconds: 60)
        XCTAssertEqual(claimed.count, 3)
        _ = try await fixture.client.query("""
            UPDATE iap.job_queue SET state = CASE id WHEN $1 THEN 'queued' WHEN $2 THEN 'attention' ELSE 'timed_out' END,
                outcome = CASE id WHEN $2 THEN 'paid_not_credited' END, transaction_ids = CASE id WHEN $2 THEN '{t9}'::text[] ELSE '{}' END,
                run_at = now(), leased_by = NULL, lease_expires_at = NULL
            """, [ids[0], ids[1]])
        let none = try await fixture.store.claim(limit: 10, workerID: "w", leaseSeconds: 60)
        XCTAssertEqual(none.count, 0, "no side row yet: nothing to claim")
        let placed = try await fixture.store.placeStrayJobs()
        XCTAssertEqual(placed, 3)
        let again = try await fixture.store.placeStrayJobs()
        XCTAssertEqual(again, 0, "placed once")
        let flagged = try await Self.flagged(fixture.client, ids[1])
        XCTAssertEqual(flagged, ["attention [\"t9\"]"])
        let parked = try await fixture.client.query("SELECT id FROM iap.job_parked").map { try $0.decode(Int.self, at: 0) }
        XCTAssertEqual(parked, [ids[2]])
        let reclaimed = try await fixture.store.claim(limit: 10, workerID: "w", leaseSeconds: 60)
        XCTAssertEqual(reclaimed.map(\.id), [ids[0]])
        await fixture.client.close()
    }

    /// The worker's own moves write their side rows in the same statement: a retry is claimable
    /// again, a time-out is swept, an attention job is flagged with what it is owed.
    func testTheCompletionWritesTheSideRowsOfTheJobsItMoves() async throws {
        let fixture = try await QueueFixture.make()
        try await fixture.enqueue(3)
        let jobs = try await fixture.store.claim(limit: 10, workerID: "w", leaseSeconds: 60)
        XCTAssertEqual(jobs.count, 3)
        let rows = [
            CompletionRow(id: jobs[0].id, state: "retrying", outcome: nil, delaySeconds: 0, appleStatus: 21_005, error: "busy", transactionIDs: []),
            CompletionRow(id: jobs[1].id, state: "timed_out", outcome: nil, delaySeconds: 0, appleStatus: nil, error: "timeout", transactionIDs: []),
            CompletionRow(id: jobs[2].id, state: "attention", outcome: "paid_not_credited", delaySeconds: nil, appleStatus: 0, error: nil,
                          transactionIDs: ["t1"]),
        ]
        let statement = try XCTUnwrap(fixture.store.completionStatement(rows, workerID: "w"))
        let written = try await fixture.client.withConnection { try QueueStore.written(try await $0.pipeline([statement])[0]).count }
        XCTAssertEqual(written, 3)
        let ready = try await fixture.client.query("SELECT id, state FROM iap.job_ready")
            .map { "\(try $0.decode(Int.self, at: 0)) \(try $0.decode(String.self, at: 1))" }
        XCTAssertEqual(ready, ["\(jobs[0].id) retrying"])
        let parked = try await fixture.client.query("SELECT id FROM iap.job_parked").map { try $0.decode(Int.self, at: 0) }
        XCTAssertEqual(parked, [jobs[1].id])
        let flagged = try await Self.flagged(fixture.client, jobs[2].id)
        XCTAssertEqual(flagged, ["attention [\"t1\"]"])
        let strays = try await fixture.store.placeStrayJobs()
        XCTAssertEqual(strays, 0, "nothing left for the stray search")
        let swept = try await fixture.store.sweepTimedOut()
        XCTAssertEqual(swept, [jobs[1].id])
        let readyAfterSweep = try await fixture.client.query("SELECT id FROM iap.job_ready ORDER BY id").map { try $0.decode(Int.self, at: 0) }
        XCTAssertEqual(readyAfterSweep, [jobs[0].id, jobs[1].id])
        await fixture.client.close()
    }

    static func flagged(_ client: PostgresClient, _ id: Int) async throws -> [String] {
        try await client.query("SELECT state, owed_transaction_ids FROM iap.job_flagged WHERE id = $1", [id])
            .map { "\(try $0.decode(String.self, at: 0)) \(try $0.decode([String]?.self, at: 1) ?? [])" }
    }
}

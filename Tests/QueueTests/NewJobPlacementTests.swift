import Postgres
@testable import Queue
import TestSupport
import XCTest

/// A new job is placed by the statement that inserts it (migration 0039): the enqueue function,
/// one row or a batch, and an insert through the iap.jobs view, whatever the state. A job
/// inserted straight into iap.job_queue is left to the leader's stray search.
final class NewJobPlacementTests: XCTestCase {
    func testTheEnqueueWritesTheReadyRowOfEachNewJob() async throws {
        let fixture = try await QueueFixture.make()
        let client = fixture.client
        let one = try await client.query("SELECT job_id FROM iap.enqueue_jobs('{receipt}', '{u1}', '{o1}', '{p}', '{cmVjZWlwdDE=}')")
        XCTAssertEqual(one.count, 1)
        // A batch of three whose last repeats the first, and one already enqueued above.
        let batch = try await client.query("""
            SELECT job_id, created FROM iap.enqueue_jobs('{receipt,receipt,receipt,receipt}', '{u2,u3,u2,u1}', '{o2,o3,o2,o1}',
                                                         '{p,p,p,p}', '{cmVjZWlwdDI=,cmVjZWlwdDM=,cmVjZWlwdDI=,cmVjZWlwdDE=}')
            ORDER BY ordinal
            """).map { try ($0.decode(Int.self, at: 0), $0.decode(Bool.self, at: 1)) }
        XCTAssertEqual(batch.map(\.1), [true, true, false, false])
        let ready = try await Self.readyIDs(client)
        XCTAssertEqual(ready, Set([try one[0].decode(Int.self, at: 0), batch[0].0, batch[1].0]), "one ready row per new job, none for a repeat")
        let strays = try await fixture.store.placeStrayJobs()
        XCTAssertEqual(strays, 0)
        let claimed = try await fixture.store.claim(limit: 10, workerID: "w", leaseSeconds: 60)
        XCTAssertEqual(claimed.count, 3)
        await client.close()
    }

    func testAnInsertThroughTheViewPlacesTheJobByItsState() async throws {
        let fixture = try await QueueFixture.make()
        let client = fixture.client
        try await fixture.enqueue(2)
        let ids = try await client.query("""
            INSERT INTO iap.jobs (kind, user_id, order_id, payload, state, outcome, transaction_ids, finished_at)
            VALUES ('receipt', 'u', 'attention-1', 'cGF5bG9hZA==', 'attention', 'paid_not_credited', '{t1}', now()),
                   ('receipt', 'u', 'parked-1', 'cGF5bG9hZA==', 'timed_out', NULL, '{}', NULL),
                   ('receipt', 'u', 'done-1', 'cGF5bG9hZA==', 'done', 'credited', '{t2}', now())
            RETURNING id
            """).map { try $0.decode(Int.self, at: 0) }
        let ready = try await Self.readyIDs(client)
        XCTAssertEqual(ready.count, 2, "the two queued jobs of the fixture")
        let flagged = try await client.query("SELECT id, state, owed_transaction_ids FROM iap.job_flagged")
            .map { try "\($0.decode(Int.self, at: 0)) \($0.decode(String.self, at: 1)) \($0.decode([String]?.self, at: 2) ?? [])" }
        XCTAssertEqual(flagged, ["\(ids[0]) attention [\"t1\"]"])
        let parked = try await client.query("SELECT id FROM iap.job_parked").map { try $0.decode(Int.self, at: 0) }
        XCTAssertEqual(parked, [ids[1]])
        let strays = try await fixture.store.placeStrayJobs()
        XCTAssertEqual(strays, 0, "every job inserted through the view is where its state says")
        await client.close()
    }

    func testAJobInsertedStraightIntoTheTableIsPlacedByTheStraySearch() async throws {
        let fixture = try await QueueFixture.make()
        let client = fixture.client
        _ = try await client.query("""
            WITH request AS (
                INSERT INTO iap.job_requests (id, kind, user_id, order_id, payload, dedup_key)
                VALUES (nextval('iap.jobs_id_seq'), 'receipt', 'u', 'straight-1', 'cGF5bG9hZA==',
                        iap.job_dedup_key('receipt', 'u', 'straight-1', 'cGF5bG9hZA=='))
                RETURNING id, kind
            )
            INSERT INTO iap.job_queue (id, kind) SELECT id, kind FROM request
            """)
        let none = try await fixture.store.claim(limit: 10, workerID: "w", leaseSeconds: 60)
        XCTAssertEqual(none.count, 0, "no ready row: no trigger writes one")
        // The leader reads a slice of ids per run: a slice without the job leaves it be.
        let bounds = try await fixture.store.jobIDBounds()
        let id = try XCTUnwrap(bounds?.last)
        XCTAssertEqual(bounds?.first, id)
        let elsewhere = try await fixture.store.placeStrayJobs(ids: (id + 1)...(id + 1_000))
        XCTAssertEqual(elsewhere, 0)
        let placed = try await fixture.store.placeStrayJobs(ids: id...id)
        XCTAssertEqual(placed, 1)
        let claimed = try await fixture.store.claim(limit: 10, workerID: "w", leaseSeconds: 60)
        XCTAssertEqual(claimed.map(\.orderID), ["straight-1"])
        await client.close()
    }

    private static func readyIDs(_ client: PostgresClient) async throws -> Set<Int> {
        Set(try await client.query("SELECT id FROM iap.job_ready").map { try $0.decode(Int.self, at: 0) })
    }
}

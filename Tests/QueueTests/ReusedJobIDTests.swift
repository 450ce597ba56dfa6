import Foundation
import Postgres
@testable import Queue
import Synchronization
import TestSupport
import XCTest

/// After a failover to a standby that lost the last commits, a job id the worker claimed before
/// may name a new job, which the same worker may claim too: same id, same lease holder. A result
/// of the first claim must not be written to the second job (seen in `bench nemesis`: a buyer's
/// receipt was never verified, its job closed with another buyer's outcome).
final class ReusedJobIDTests: XCTestCase {
    func testAResultIsNotWrittenToAnotherJobThatGotItsID() async throws {
        let fixture = try await QueueFixture.make()
        try await fixture.enqueue(1)
        let client = fixture.client
        let release = Mutex(false)
        let seen = Mutex<[String]>([])
        let worker = fixture.worker(ScriptedHandler { job in
            seen.withLock { $0.append(job.payload) }
            while !release.withLock({ $0 }) { try? await Task.sleep(for: .milliseconds(10)) }
            return .finish(.done, "acknowledged")
        }) { $0.concurrency = 1 }
        let run = Task { await worker.run() }
        let claimed = try await fixture.eventually { seen.withLock { $0.count } == 1 }
        XCTAssertTrue(claimed)
        let row = try await client.query("SELECT id, leased_by FROM iap.job_queue")[0]
        let (id, holder) = (try row.decode(Int.self, at: 0), try row.decode(String.self, at: 1))

        // The pool opens new sessions (as it does when it reconnects after a failover) ...
        let before = client.sessionsOpened
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<4 { group.addTask { _ = try await client.query("SELECT pg_sleep(0.2)") } }
            try await group.waitForAll()
        }
        XCTAssertGreaterThan(client.sessionsOpened, before)
        // ... and the server it reaches gives the id to another buyer's job, leased to this worker.
        try await client.withConnection { connection in
            try await connection.transaction { tx in
                _ = try await tx.query("DELETE FROM iap.job_queue WHERE id = $1", [id])
                _ = try await tx.query("DELETE FROM iap.job_requests WHERE id = $1", [id])
                _ = try await tx.query("""
                    INSERT INTO iap.job_requests (id, kind, user_id, order_id, payload, dedup_key)
                    VALUES ($1, 'receipt', 'other-buyer', 'other-order', 'b3RoZXI=',
                            iap.job_dedup_key('receipt', 'other-buyer', 'other-order', 'b3RoZXI='))
                    """, [id])
                _ = try await tx.query("""
                    INSERT INTO iap.job_queue (id, kind, state, attempts, leased_by, lease_expires_at)
                    VALUES ($1, 'receipt', 'running', 1, $2, now() + interval '60 seconds')
                    """, [id, holder])
            }
        }

        release.withLock { $0 = true }
        let fenced = try await fixture.eventually { fixture.logs.lines.contains { $0.contains("lease_lost") } }
        worker.shutdown()
        await run.value
        XCTAssertTrue(fenced, "the stale result was not fenced")
        let state = try await client.query("SELECT state, outcome FROM iap.job_queue WHERE id = $1", [id])[0]
        XCTAssertEqual(try state.decode(String.self, at: 0), "running", "another job's result was written to this one")
        XCTAssertNil(try state.decode(String?.self, at: 1))
        await client.close()
    }
}

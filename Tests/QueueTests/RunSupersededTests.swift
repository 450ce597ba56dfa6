import Foundation
import Postgres
@testable import Queue
import TestSupport
import XCTest

/// A run whose lease ran out (the database too slow to take its result in time) is rescued and
/// claimed again, maybe by the same worker, while its result still waits to be written. Both runs'
/// results then wait side by side; the lease check names the worker, not the run, so written in
/// one batch both would pass and the job would be announced twice. The later run is the job's:
/// the earlier one's result is dropped as a lost lease.
final class RunSupersededTests: XCTestCase {
    func testAnEarlierRunsResultWaitingBesideTheLaterRunsIsDroppedAndTheJobFinishesOnce() async throws {
        let fixture = try await QueueFixture.make()
        // Every result released together lands in one batch.
        let holding = try await fixture.workerHoldingFive { $0.completionLinger = 0.5 }
        let (held, worker, run) = try XCTUnwrap(holding, "the five jobs start")
        // The rescuer's work once the leases ran out: the jobs queued again at the attempt they
        // spent, in the ready set, their lease row gone.
        _ = try await fixture.client.query("""
            WITH rescued AS (
                UPDATE iap.job_queue SET state = 'queued', leased_by = NULL, lease_expires_at = NULL
                WHERE state = 'running' RETURNING id, run_at
            )
            INSERT INTO iap.job_ready (id, state, run_at) SELECT id, 'queued', run_at FROM rescued
            """)
        _ = try await fixture.client.query("DELETE FROM iap.job_leases")
        let secondRuns = try await fixture.eventually { held.started.load(ordering: .relaxed) == 10 }
        XCTAssertTrue(secondRuns, "the worker claims the jobs again at their next attempt and runs them")
        held.release()
        let finished = try await fixture.eventually { try await fixture.states()["done"] == 5 }
        XCTAssertTrue(finished, "\(fixture.logs.lines.joined(separator: "\n"))")
        try await Task.sleep(for: .milliseconds(700)) // a lingering batch, if one were left, is written by now
        worker.shutdown()
        await run.value
        let finishes = fixture.logs.lines.filter { $0.contains("event=job_finished") }
        XCTAssertEqual(finishes.count, 5, "each job announced once:\n\(finishes.joined(separator: "\n"))")
        XCTAssertTrue(finishes.allSatisfy { $0.contains("attempt=2") }, "the later run is the one written")
        let dropped = fixture.logs.lines.filter { $0.contains("event=lease_lost") && $0.contains("attempt=1") }
        XCTAssertEqual(dropped.count, 5, "the earlier runs' results are dropped as lost leases")
        let logged = try await fixture.client.query("SELECT sum(jobs)::bigint FROM iap.job_finishes")[0].decode(Int.self, at: 0)
        XCTAssertEqual(logged, 5)
        let attempts = try await fixture.client.query("SELECT DISTINCT attempts FROM iap.job_queue").map { try $0.decode(Int.self, at: 0) }
        XCTAssertEqual(attempts, [2])
        let leaseRows = try await fixture.client.query("SELECT count(*)::bigint FROM iap.job_leases")[0].decode(Int.self, at: 0)
        XCTAssertEqual(leaseRows, 0, "both claims' lease rows are dropped once their jobs are let go")
        await fixture.client.close()
    }
}

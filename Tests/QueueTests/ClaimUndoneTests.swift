import Foundation
import Postgres
@testable import Queue
import TestSupport
import XCTest

/// A claim undone after its reply (a crash or a failover lost its commit) puts its jobs back in the
/// queue while the worker that made it still runs them. Its next claim may take them again at the
/// same attempt; the lease check names the worker, so two runs would both be written and each job
/// announced twice. Each runs once.
final class ClaimUndoneTests: XCTestCase {
    func testJobsOfAnUndoneClaimTakenAgainByTheSameWorkerRunOnceAndFinishOnce() async throws {
        let fixture = try await QueueFixture.make()
        let holding = try await fixture.workerHoldingFive()
        let (held, worker, run) = try XCTUnwrap(holding, "the five jobs start")
        // The claim undone, as a crash restores it: the jobs queued at their former attempt, in
        // the ready set again, its lease row gone.
        _ = try await fixture.client.query("""
            WITH undone AS (
                UPDATE iap.job_queue SET state = 'queued', attempts = attempts - 1, leased_by = NULL, lease_expires_at = NULL
                WHERE state = 'running' RETURNING id, run_at
            )
            INSERT INTO iap.job_ready (id, state, run_at) SELECT id, 'queued', run_at FROM undone
            """)
        _ = try await fixture.client.query("DELETE FROM iap.job_leases")
        let claimedAgain = try await fixture.eventually { fixture.logs.lines.contains { $0.contains("event=jobs_claimed_again") } }
        XCTAssertTrue(claimedAgain, "\(fixture.logs.lines.joined(separator: "\n"))")
        held.release()
        let finished = try await fixture.eventually { try await fixture.states()["done"] == 5 }
        XCTAssertTrue(finished, "\(fixture.logs.lines.joined(separator: "\n"))")
        try await Task.sleep(for: .milliseconds(300)) // a second run, if one had started, would be written by now
        worker.shutdown()
        await run.value
        XCTAssertEqual(held.started.load(ordering: .relaxed), 5, "no job ran twice")
        XCTAssertEqual(fixture.logs.lines.filter { $0.contains("event=job_finished") }.count, 5)
        XCTAssertTrue(fixture.logs.lines.contains { $0.contains("event=jobs_claimed_again") && $0.contains("jobs=5") })
        let attempts = try await fixture.client.query("SELECT DISTINCT attempts FROM iap.job_queue").map { try $0.decode(Int.self, at: 0) }
        XCTAssertEqual(attempts, [1])
        let leaseRows = try await fixture.client.query("SELECT count(*)::bigint FROM iap.job_leases")[0].decode(Int.self, at: 0)
        XCTAssertEqual(leaseRows, 0, "the new claim's lease row was dropped once its jobs were written")
        let logged = try await fixture.client.query("SELECT sum(jobs)::bigint FROM iap.job_finishes")[0].decode(Int.self, at: 0)
        XCTAssertEqual(logged, 5)
        await fixture.client.close()
    }
}

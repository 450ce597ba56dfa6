import Foundation
import Postgres
@testable import Queue
import TestSupport
import XCTest

/// A claim's lease row (migration 0029) lives as long as one of its jobs may still run on it.
final class LeaseRowsTests: XCTestCase {
    private func claimed(_ ids: ClosedRange<Int>, lease: Int?, epoch: Int = 2, attempts: Int = 1) -> [ClaimedJob] {
        ids.map { ClaimedJob(id: $0, kind: "receipt", userID: "u", orderID: "o\($0)", productID: nil, payload: "", attempts: attempts,
                             leaseID: lease, sessionEpoch: epoch) }
    }

    /// A job claimed again at the attempt it runs at here was claimed by a claim that was undone
    /// (a crash or failover lost its commit): it is not started twice, and both lease rows stay
    /// while it runs. At a later attempt (claimed after its result was written) it is a new run.
    func testAJobClaimedAgainAtTheSameAttemptIsNotStartedTwice() {
        let held = HeldJobs()
        let first = claimed(1...3, lease: 10)
        XCTAssertEqual(held.hold(first).map(\.id), [1, 2, 3])
        let again = claimed(2...4, lease: 11) // lease 10's claim undone: jobs 2 and 3 taken again, with job 4
        XCTAssertEqual(held.hold(again).map(\.id), [4])
        XCTAssertEqual(held.count, 4)
        held.letGo([first[0], first[1], again[2]])
        XCTAssertEqual(held.count, 1)
        XCTAssertEqual(held.snapshot.sorted(), [3, 3], "job 3 is held under both leases")
        XCTAssertEqual(held.takeDroppableLeases(sessionsOpened: 2), DroppableLeases(), "job 3 still runs: both its lease rows stay")
        held.letGo([first[2]])
        XCTAssertEqual(held.takeDroppableLeases(sessionsOpened: 2).settled.sorted(), [10, 11])
        XCTAssertEqual(held.count, 0)
        held.hold(claimed(5...5, lease: 12))
        XCTAssertEqual(held.hold(claimed(5...6, lease: 13, attempts: 2)).map(\.id), [5, 6], "a later attempt is a new run")
        XCTAssertEqual(held.count, 3)
    }

    func testARunWhoseJobIsClaimedAgainAtAnotherAttemptIsSupersededUntilLetGo() {
        let held = HeldJobs()
        let first = claimed(1...3, lease: 10)
        held.hold(first)
        XCTAssertEqual(held.superseded(among: first), [], "nothing is superseded before a later claim")
        let later = claimed(2...3, lease: 11, attempts: 2) // jobs 2 and 3 rescued and claimed here again
        held.hold(later)
        XCTAssertEqual(held.superseded(among: first + later), [first[1].run, first[2].run], "the earlier runs only")
        held.letGo([first[1]])
        XCTAssertEqual(held.superseded(among: first + later), [first[2].run])
        held.letGo([first[2]] + later)
        XCTAssertEqual(held.superseded(among: first + later), [])
        XCTAssertEqual(held.count, 1)
        let unleased = claimed(7...7, lease: nil)
        held.hold(unleased)
        held.hold(claimed(7...7, lease: nil, attempts: 2))
        XCTAssertEqual(held.superseded(among: unleased), [unleased[0].run], "a claim without a lease row too")
        let exhausted = claimed(8...8, lease: 20, attempts: 6)
        held.hold(exhausted)
        held.hold(claimed(8...8, lease: 21, attempts: 1)) // rescued as timed out, swept, claimed in a fresh round
        XCTAssertEqual(held.superseded(among: exhausted), [exhausted[0].run], "any other attempt supersedes it")
        // A run held under two leases (its claim undone and taken again) is forgotten under both when let go.
        let run = claimed(30...30, lease: 40)
        held.hold(run)
        held.hold(claimed(30...30, lease: 41))
        held.hold(claimed(30...30, lease: 42, attempts: 2))
        held.letGo(run)
        XCTAssertEqual(held.superseded(among: claimed(30...30, lease: 41)), [])
    }

    func testALeaseIsDroppableOnceAllItsJobsAreLetGoAndSettledOnlyWithoutANewSession() {
        let held = HeldJobs()
        let (first, second) = (claimed(1...3, lease: 10), claimed(4...5, lease: 11))
        held.hold(first)
        held.hold(second)
        XCTAssertEqual(held.count, 5)
        held.letGo([first[0], first[1], second[0], first[0]]) // job 1 twice: let go of once
        XCTAssertEqual(held.count, 2)
        XCTAssertEqual(held.snapshot.sorted(), [3, 5])
        XCTAssertEqual(held.takeDroppableLeases(sessionsOpened: 2), DroppableLeases(), "each lease still has a job out")
        held.letGo([first[2], second[1]] + claimed(99...99, lease: 10)) // 99: never held
        // Lease 11's jobs were written after the pool opened another session: maybe to a new primary.
        XCTAssertEqual(held.takeDroppableLeases(sessionsOpened: 2), DroppableLeases(settled: [10, 11]))
        let third = claimed(6...6, lease: 12)
        held.hold(third)
        held.letGo(third)
        XCTAssertEqual(held.takeDroppableLeases(sessionsOpened: 3), DroppableLeases(unsure: [12]))
        XCTAssertEqual(held.takeDroppableLeases(sessionsOpened: 3), DroppableLeases(), "each returned once")
        // The count is the claim's own (its jobs'): a claim sent after the third session opened is settled.
        let fourth = claimed(7...7, lease: 13, epoch: 3)
        held.hold(fourth)
        held.letGo(fourth)
        XCTAssertEqual(held.takeDroppableLeases(sessionsOpened: 3), DroppableLeases(settled: [13]))
        XCTAssertEqual(held.count, 0)
    }

    func testAnUnsureLeaseRowStaysWhileAJobStillRunsOnItASettledOneGoes() async throws {
        let fixture = try await QueueFixture.make()
        try await fixture.enqueue(4)
        let jobs = try await fixture.store.claim(limit: 2, workerID: "w", leaseSeconds: 60)
        let more = try await fixture.store.claim(limit: 2, workerID: "w", leaseSeconds: 60)
        let (first, second) = (try XCTUnwrap(jobs.first?.leaseID), try XCTUnwrap(more.first?.leaseID))
        // As after a failover that lost the completions: both leases' jobs still run on them.
        let drop = try XCTUnwrap(fixture.store.dropLeasesStatement(DroppableLeases(settled: [first], unsure: [second])))
        _ = try await fixture.client.withConnection { try await $0.pipeline([drop]) }
        let left = try await fixture.client.query("SELECT id FROM iap.job_leases ORDER BY id").map { try $0.decode(Int.self, at: 0) }
        XCTAssertEqual(left, [second], "the unsure row is kept for the rescuer; the settled one is gone")
        // Its jobs written, the unsure row goes too.
        _ = try await fixture.client.query("UPDATE iap.job_queue SET state = 'done', leased_by = NULL, lease_expires_at = NULL WHERE id = ANY($1::bigint[])",
                                           [more.map(\.id)])
        try await fixture.store.dropLeases(DroppableLeases(unsure: [second]))
        let count = try await fixture.client.query("SELECT count(*)::bigint FROM iap.job_leases")[0].decode(Int.self, at: 0)
        XCTAssertEqual(count, 0)
        await fixture.client.close()
    }

    func testADrainLeavesAFewLeaseRowsAndItsShutdownNone() async throws {
        let fixture = try await QueueFixture.make()
        try await fixture.enqueue(1_000)
        let worker = fixture.worker(ScriptedHandler { _ in .finish(.done, "credited", transactionIDs: []) }) {
            $0.concurrency = 40; $0.claimBatch = 20
        }
        let run = Task { await worker.run() }
        let drained = try await fixture.eventually { try await fixture.states()["done"] == 1_000 }
        let leaseRows = { try await fixture.client.query("SELECT count(*)::bigint FROM iap.job_leases")[0].decode(Int.self, at: 0) }
        // Each claim's row goes with a completion that follows its last job's: only the last
        // few wait for the next one, or for the shutdown.
        let whileRunning = try await leaseRows()
        worker.shutdown()
        await run.value
        XCTAssertTrue(drained)
        XCTAssertLessThanOrEqual(whileRunning, 5, "50 claims made")
        let afterShutdown = try await leaseRows()
        XCTAssertEqual(afterShutdown, 0)
        await fixture.client.close()
    }
}

import Foundation
import Postgres
@testable import Queue
import Synchronization
import TestSupport
import XCTest

/// A claim sent on its connection the moment the reply of the claim before it is in
/// (`QueueStore.claim(on:…)`, `claimSentAhead`): each takes its own jobs and lease row, and a worker
/// whose claims go out this way runs every job once.
final class ClaimSentAheadTests: XCTestCase {
    func testEachClaimSentAheadTakesTheNextJobsUnderItsOwnLease() async throws {
        let fixture = try await QueueFixture.make()
        // 150 jobs in the even half of the ready set (ids below 1,024), then 100 in the odd one.
        try await fixture.enqueue(150)
        _ = try await fixture.client.query("SELECT setval('iap.jobs_id_seq', 1023)")
        try await fixture.enqueue(100, prefix: "odd-half")
        let asked = Mutex<[Int]>([])
        // Each claim sent ahead starts in the half the worker names: the first claim reads the whole
        // set in order, the two sent ahead the odd half first (the second finds it empty).
        let next: @Sendable (Int) -> QueueStore.NextClaim? = { claimed in
            asked.withLock { $0.append(claimed) }
            return claimed == 100 ? (100, 1) : nil
        }
        let batches = try await fixture.client.withConnection { connection -> [[ClaimedJob]] in
            // The claim is prepared on this session by its first run; from then on the next may go out ahead.
            for half in [nil, 1] {
                _ = try await fixture.store.claim(on: connection, limit: 0, workerID: "w", leaseSeconds: 60, startingIn: half, cache: nil,
                                                  next: { _ in nil })
            }
            var reply = try await fixture.store.claim(on: connection, limit: 100, workerID: "w", leaseSeconds: 60, startingIn: nil, cache: nil, next: next)
            var batches = [reply.jobs]
            while let sent = reply.ahead {
                XCTAssertEqual(sent.limit, 100)
                reply = try await fixture.store.claimSentAhead(sent, on: connection, workerID: "w", leaseSeconds: 60, cache: nil, next: next)
                batches.append(reply.jobs)
            }
            return batches
        }
        XCTAssertEqual(batches.map(\.count), [100, 100, 50])
        XCTAssertEqual(asked.withLock { $0 }, [100, 100, 50])
        guard batches.count == 3 else { return }
        XCTAssertTrue(batches[0].allSatisfy { $0.id < 1_024 }, "the oldest first")
        XCTAssertTrue(batches[1].allSatisfy { $0.id >= 1_024 }, "the odd half first, as named")
        XCTAssertTrue(batches[2].allSatisfy { $0.id < 1_024 }, "then the rest of the even half")
        let ids = batches.flatMap { $0.map(\.id) }
        XCTAssertEqual(Set(ids).count, 250, "no job claimed twice")
        let leases = batches.map { Set($0.compactMap(\.leaseID)) }
        XCTAssertEqual(leases.map(\.count), [1, 1, 1])
        XCTAssertEqual(Set(leases.flatMap { $0 }).count, 3, "a lease row for each claim")
        let states = try await fixture.states()
        XCTAssertEqual(states, ["running": 250])
        XCTAssertEqual(fixture.client.brokenConnectionCount, 0, "every reply read: the connection went back whole")
        await fixture.client.close()
    }

    func testAWorkerWhoseClaimsGoOutAheadRunsEveryJobOnce() async throws {
        let fixture = try await QueueFixture.make()
        try await fixture.enqueue(3_000)
        let seen = Mutex<[Int: Int]>([:])
        let worker = fixture.worker(ScriptedHandler { job in
            seen.withLock { $0[job.id, default: 0] += 1 }
            return .finish(.done, "credited", transactionIDs: ["t\(job.id)"])
        }) { $0.concurrency = 400; $0.claimBatch = 50 }
        let run = Task { await worker.run() }
        let drained = try await fixture.eventually { try await fixture.states()["done"] == 3_000 }
        worker.shutdown()
        await run.value
        let states = try await fixture.states()
        XCTAssertTrue(drained, "\(states)")
        XCTAssertEqual(seen.withLock { $0.count }, 3_000)
        XCTAssertEqual(seen.withLock { $0.values.max() }, 1)
        let leaseRows = try await fixture.client.query("SELECT count(*)::bigint FROM iap.job_leases")[0].decode(Int.self, at: 0)
        XCTAssertEqual(leaseRows, 0)
        XCTAssertEqual(fixture.client.brokenConnectionCount, 0)
        XCTAssertFalse(fixture.logs.lines.contains { $0.contains("claim_failed") })
        await fixture.client.close()
    }
}

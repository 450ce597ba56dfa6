import Foundation
import Postgres
import Queue
import Synchronization
import XCTest

final class QueueEngineTests: XCTestCase {
    func testDrainsEveryJobExactlyOnce() async throws {
        let fixture = try await QueueFixture.make()
        try await fixture.enqueue(2_000)
        let seen = Mutex<[Int: Int]>([:])
        let worker = fixture.worker(ScriptedHandler { job in
            seen.withLock { $0[job.id, default: 0] += 1 }
            return .finish(.done, "credited", transactionIDs: ["t\(job.id)"])
        }) { $0.concurrency = 50; $0.claimBatch = 100 }
        let run = Task { await worker.run() }
        let drained = try await fixture.eventually { try await fixture.states()["done"] == 2_000 }
        worker.shutdown()
        await run.value
        let states = try await fixture.states()
        XCTAssertTrue(drained, "\(states)")
        XCTAssertEqual(seen.withLock { $0.count }, 2_000)
        XCTAssertEqual(seen.withLock { $0.values.max() }, 1)
        let sample = try await fixture.client.query("SELECT outcome, transaction_ids, finished_at IS NOT NULL, leased_by FROM iap.jobs LIMIT 1")[0]
        XCTAssertEqual(try sample.decode(String.self, at: 0), "credited")
        XCTAssertEqual(try sample.decode([String].self, at: 1).count, 1)
        XCTAssertEqual(try sample.decode(Bool.self, at: 2), true)
        XCTAssertNil(try sample.decode(String?.self, at: 3))
        await fixture.client.close()
    }

    func testRetriesGrowThenTimeOutThenSweepSucceeds() async throws {
        let fixture = try await QueueFixture.make()
        try await fixture.enqueue(1)
        let appleUp = Atomic<Bool>(false)
        let worker = fixture.worker(ScriptedHandler { _ in
            appleUp.load(ordering: .relaxed) ? .finish(.done, "credited") : .retry("http_503", appleStatus: 503)
        }) {
            $0.maxAttempts = 3
            $0.retryPolicy = .schedule([0.2, 0.6])
        }
        let run = Task { await worker.run() }
        // After attempt 1: retrying, run_at ~0.2 s ahead; after attempt 2: ~0.6 s ahead.
        var delays: [Double] = []
        var lastAttempt = 0
        _ = try await fixture.eventually(10) {
            let row = try await fixture.client.query(
                "SELECT state, attempts, extract(epoch FROM run_at - now())::float8 FROM iap.jobs")[0]
            let attempts = try row.decode(Int.self, at: 1)
            if try row.decode(String.self, at: 0) == "retrying", attempts > lastAttempt {
                lastAttempt = attempts
                delays.append(try row.decode(Double.self, at: 2))
            }
            return try row.decode(String.self, at: 0) == "timed_out"
        }
        let timedOut = try await fixture.client.query("SELECT state, attempts, apple_status FROM iap.jobs")[0]
        XCTAssertEqual(try timedOut.decode(String.self, at: 0), "timed_out")
        XCTAssertEqual(try timedOut.decode(Int.self, at: 1), 3)
        XCTAssertEqual(try timedOut.decode(Int.self, at: 2), 503)
        XCTAssertEqual(delays.count, 2, "\(delays)")
        if delays.count == 2 { XCTAssertGreaterThan(delays[1], delays[0]) }
        // Apple comes back; the sweep gives the job a fresh round and it succeeds.
        appleUp.store(true, ordering: .relaxed)
        let swept = try await fixture.store.sweepTimedOut()
        XCTAssertEqual(swept.count, 1)
        let done = try await fixture.eventually { try await fixture.states()["done"] == 1 }
        XCTAssertTrue(done)
        let final = try await fixture.client.query("SELECT sweeps, outcome FROM iap.jobs")[0]
        XCTAssertEqual(try final.decode(Int.self, at: 0), 1)
        XCTAssertEqual(try final.decode(String.self, at: 1), "credited")
        XCTAssertTrue(fixture.logs.lines.contains { $0.contains("event=job_retry") && $0.contains("reason=http_503") })
        XCTAssertTrue(fixture.logs.lines.contains { $0.contains("event=job_timed_out") })
        worker.shutdown()
        await run.value
        await fixture.client.close()
    }

    func testLateResultAfterLeaseExpiredIsNotWritten() async throws {
        let fixture = try await QueueFixture.make()
        try await fixture.enqueue(1)
        let slow = try await fixture.store.claim(limit: 1, workerID: "slow-worker", leaseSeconds: 0.3)
        XCTAssertEqual(slow.count, 1)
        try await Task.sleep(for: .milliseconds(400))
        let rescued = try await fixture.store.rescueExpiredLeases(maxAttempts: 5)
        XCTAssertEqual(rescued.map(\.state), ["queued"])
        let fast = try await fixture.store.claim(limit: 1, workerID: "fast-worker", leaseSeconds: 30)
        XCTAssertEqual(fast.first?.id, slow.first?.id)
        // The slow worker's late write touches nothing; the fast worker's lands.
        let late = try await fixture.client.query("""
            UPDATE iap.jobs SET state = 'done' WHERE id = $1 AND state = 'running' AND leased_by = $2 AND lease_expires_at > now()
            """, [slow[0].id, "slow-worker"])
        XCTAssertEqual(late.affectedRows, 0)
        await fixture.client.close()
    }

    func testARunningJobNoLeaseRowNamesIsRescuedWhenItsSliceIsRead() async throws {
        let fixture = try await QueueFixture.make()
        try await fixture.enqueue(2)
        // Leased by hand, straight in iap.job_queue: no lease row, the lease two minutes gone.
        let ids = try await fixture.client.query("""
            UPDATE iap.job_queue SET state = 'running', attempts = 1, leased_by = 'by-hand',
                lease_expires_at = now() - interval '2 minutes' RETURNING id
            """).map { try $0.decode(Int.self, at: 0) }.sorted()
        _ = try await fixture.client.query("DELETE FROM iap.job_ready")
        let expired = try await fixture.store.rescueExpiredLeases(maxAttempts: 5)
        XCTAssertEqual(expired.count, 0, "no lease row to expire")
        let newer = try await fixture.store.rescueOrphanedLeases(maxAttempts: 5, ids: ids[1]...ids[1])
        XCTAssertEqual(newer.map(\.id), [ids[1]], "only the slice's job")
        let rest = try await fixture.store.rescueOrphanedLeases(maxAttempts: 5)
        XCTAssertEqual(rest.map(\.id), [ids[0]])
        XCTAssertEqual(rest.map(\.state), ["queued"])
        let claimed = try await fixture.store.claim(limit: 10, workerID: "w", leaseSeconds: 30)
        XCTAssertEqual(claimed.map(\.id).sorted(), ids, "both back in the ready set")
        await fixture.client.close()
    }

    func testEngineDropsResultWhoseLeaseWasTakenOver() async throws {
        let fixture = try await QueueFixture.make()
        try await fixture.enqueue(1)
        let calls = Atomic<Int>(0)
        let worker = fixture.worker(ScriptedHandler { _ in
            calls.add(1, ordering: .relaxed)
            try? await Task.sleep(for: .milliseconds(1_000))
            return .finish(.done, "credited", transactionIDs: ["late"])
        }) { $0.concurrency = 1 }
        let run = Task { await worker.run() }
        _ = try await fixture.eventually { calls.load(ordering: .relaxed) >= 1 }
        // Meanwhile the lease passes to another worker (as after an expiry and a rescue).
        _ = try await fixture.client.query(
            "UPDATE iap.jobs SET leased_by = 'other', lease_expires_at = now() + interval '30 seconds' WHERE state = 'running'")
        let lost = try await fixture.eventually(10) { fixture.logs.lines.contains { $0.contains("event=lease_lost") } }
        XCTAssertTrue(lost)
        let row = try await fixture.client.query("SELECT state, leased_by, transaction_ids FROM iap.jobs")[0]
        XCTAssertEqual(try row.decode(String.self, at: 0), "running", "the late result must not be written")
        XCTAssertEqual(try row.decode(String?.self, at: 1), "other")
        XCTAssertEqual(try row.decode([String].self, at: 2), [])
        worker.shutdown()
        await run.value
        await fixture.client.close()
    }

    func testGracefulShutdownFinishesThenReleases() async throws {
        let fixture = try await QueueFixture.make()
        try await fixture.enqueue(20)
        let worker = fixture.worker(ScriptedHandler { _ in
            try? await Task.sleep(for: .milliseconds(300))
            return .finish(.done, "credited")
        }) { $0.concurrency = 5; $0.shutdownGrace = 10 }
        let run = Task { await worker.run() }
        _ = try await fixture.eventually { worker.inflightCount == 5 }
        worker.shutdown()
        await run.value
        let states = try await fixture.states()
        XCTAssertEqual(states["running"], nil)
        XCTAssertEqual(states["done"], 5, "\(states)")
        XCTAssertEqual(states["queued"], 15, "\(states)")

        // With no grace, in-flight jobs are released without burning the attempt.
        let impatient = fixture.worker(ScriptedHandler { _ in
            try? await Task.sleep(for: .seconds(30))
            return .finish(.done, "credited")
        }) { $0.concurrency = 4; $0.shutdownGrace = 0.1 }
        let second = Task { await impatient.run() }
        _ = try await fixture.eventually { impatient.inflightCount == 4 }
        impatient.shutdown()
        await second.value
        let after = try await fixture.client.query("SELECT count(*) FILTER (WHERE state = 'running'), max(attempts) FILTER (WHERE state = 'queued') FROM iap.jobs")[0]
        XCTAssertEqual(try after.decode(Int.self, at: 0), 0)
        XCTAssertEqual(try after.decode(Int.self, at: 1), 0)
        XCTAssertTrue(fixture.logs.lines.contains { $0.contains("event=jobs_released") && $0.contains("jobs=4") },
                      fixture.logs.lines.filter { !$0.contains("job_claimed") }.suffix(8).joined(separator: "\n"))
        await fixture.client.close()
    }

    func testOnlyOneMaintenanceLeaderAndHandover() async throws {
        let fixture = try await QueueFixture.make()
        let first = Maintenance(client: fixture.client, leaderID: "first", tasks: [], logger: fixture.logger, ttl: 1, dutyInterval: 0.1)
        let second = Maintenance(client: fixture.client, leaderID: "second", tasks: [], logger: fixture.logger, ttl: 1, dutyInterval: 0.1)
        let runs = [Task { await first.run() }, Task { await second.run() }]
        let elected = try await fixture.eventually { first.isLeader || second.isLeader }
        XCTAssertTrue(elected)
        try await Task.sleep(for: .milliseconds(300))
        XCTAssertNotEqual(first.isLeader, second.isLeader, "exactly one leader")
        let (leader, follower) = first.isLeader ? (first, second) : (second, first)
        leader.stop()
        let handedOver = try await fixture.eventually { follower.isLeader }
        XCTAssertTrue(handedOver)
        follower.stop()
        for run in runs { await run.value }
        await fixture.client.close()
    }

    func testStatisticsCountLiveStatesAndEstimateFinishedOnesPastTheLimit() async throws {
        let fixture = try await QueueFixture.make()
        try await fixture.enqueue(40)
        // 3 running, 2 attention, 25 done, 4 failed; 6 stay queued.
        _ = try await fixture.client.query("""
            UPDATE iap.jobs SET state = CASE WHEN rn <= 3 THEN 'running' WHEN rn <= 5 THEN 'attention'
                                             WHEN rn <= 30 THEN 'done' ELSE 'failed' END,
                leased_by = CASE WHEN rn <= 3 THEN 'w' END, lease_expires_at = CASE WHEN rn <= 3 THEN now() + interval '1 minute' END,
                finished_at = CASE WHEN rn > 3 THEN now() END
            FROM (SELECT id, row_number() OVER (ORDER BY id) AS rn FROM iap.jobs) AS numbered
            WHERE iap.jobs.id = numbered.id AND numbered.rn <= 34
            """)
        let exact = try await QueueStatistics.snapshot(fixture.client)
        XCTAssertEqual(exact.jobsByState, ["queued": 6, "running": 3, "retrying": 0, "timed_out": 0, "done": 25, "failed": 4, "attention": 2])
        XCTAssertEqual(exact.estimatedStates, [])
        XCTAssertGreaterThan(exact.oldestQueuedAgeSeconds, 0)

        // Past the limit a finished state is the index's estimate (after ANALYZE, exact here).
        _ = try await fixture.client.query("ANALYZE iap.job_queue, iap.job_requests")
        let capped = try await QueueStatistics.snapshot(fixture.client, exactFinishedLimit: 10)
        XCTAssertEqual(capped.jobsByState["done"], 25)
        XCTAssertEqual(capped.estimatedStates, ["done"])
        XCTAssertEqual(capped.jobsByState["failed"], 4)
        XCTAssertEqual(capped.jobsByState["queued"], 6, "live states are always counted")
        await fixture.client.close()
    }

    func testRetryPolicies() {
        let exponential = RetryPolicy.exponential(base: 1, cap: 10)
        XCTAssertEqual(exponential.delay(afterAttempt: 1, random: { $0.upperBound }), 1)
        XCTAssertEqual(exponential.delay(afterAttempt: 3, random: { $0.upperBound }), 4)
        XCTAssertEqual(exponential.delay(afterAttempt: 30, random: { $0.upperBound }), 10)
        XCTAssertEqual(exponential.delay(afterAttempt: 3, random: { $0.lowerBound }), 0, "full jitter reaches 0")
        let schedule = RetryPolicy.schedule([1, 5, 10, 100, 600])
        XCTAssertEqual((1...7).map { schedule.delay(afterAttempt: $0) }, [1, 5, 10, 100, 600, 600, 600])
    }
}

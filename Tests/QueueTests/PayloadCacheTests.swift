import Foundation
import Postgres
@testable import Queue
import Synchronization
import XCTest

/// A claim leaves out the payload of a job the worker sent back for a retry.
final class PayloadCacheTests: XCTestCase {
    func testTheOldestEntryGoesFirstAndATakenPayloadIsGone() {
        let cache = PayloadCache(capacity: 2)
        cache.remember(1, payload: "one", epoch: 1)
        cache.remember(2, payload: "two", epoch: 1)
        cache.remember(3, payload: "three", epoch: 1)
        XCTAssertEqual(Set(cache.ids(epoch: 1)), [2, 3])
        XCTAssertEqual(cache.take(2, epoch: 1), "two")
        XCTAssertNil(cache.take(2, epoch: 1))
        for id in 4...50 { cache.remember(id, payload: "\(id)", epoch: 1) }
        XCTAssertEqual(Set(cache.ids(epoch: 1)), [49, 50])
    }

    /// A job id names the same job only on the server that handed it out: after a reconnect
    /// (maybe to a standby promoted without the last commits, which hands the id to a new job),
    /// an entry learnt before is never used.
    func testAnEntryHoldsOnlyForTheSessionsItWasLearntOn() {
        let cache = PayloadCache()
        cache.remember(7, payload: "buyer-a's receipt", epoch: 3)
        XCTAssertEqual(cache.ids(epoch: 4), [])
        XCTAssertNil(cache.take(7, epoch: 4))
        XCTAssertEqual(cache.count, 0)
    }

    func testAClaimAfterAReconnectReadsThePayloadAgain() async throws {
        let fixture = try await QueueFixture.make()
        try await fixture.enqueue(1)
        let id = try await fixture.client.query("SELECT id FROM iap.job_queue")[0].decode(Int.self, at: 0)
        let cache = PayloadCache()
        cache.remember(id, payload: "another job's payload", epoch: fixture.client.sessionsOpened - 1)
        let claimed = try await fixture.store.claim(limit: 1, workerID: "w", leaseSeconds: 30, startingIn: nil, cache: cache)
        XCTAssertEqual(claimed.map(\.payload), ["cGF5bG9hZA=="])
        await fixture.client.close()
    }

    func testAClaimLeavesOutTheCachedPayloadsAndReadsAnEvictedOneAgain() async throws {
        let fixture = try await QueueFixture.make()
        try await fixture.enqueue(3)
        let ids = try await fixture.client.query("SELECT id FROM iap.job_queue ORDER BY id").map { try $0.decode(Int.self, at: 0) }
        let cache = PayloadCache()
        cache.remember(ids[0], payload: "from-the-cache", epoch: fixture.client.sessionsOpened)
        let claimed = try await fixture.store.claim(limit: 1, workerID: "w", leaseSeconds: 30, startingIn: nil, cache: cache)
        XCTAssertEqual(claimed.map(\.payload), ["from-the-cache"], "the claim sent no payload for a cached job")
        XCTAssertEqual(cache.count, 0)

        // Named in the claim, but gone from the cache by the time the reply is read: read again.
        let rows = try await fixture.client.query(QueueStore.claimSQL, [1, "w", 30.0, [ids[1]]])
        XCTAssertNil(try rows[0].decode(String?.self, at: 5))
        let reread = try await fixture.store.claimedJobs(rows, cache: cache, epoch: fixture.client.sessionsOpened)
        XCTAssertEqual(reread.map(\.payload), ["cGF5bG9hZA=="])
        await fixture.client.close()
    }

    func testARetryOnTheSameWorkerUsesThePayloadItSentBack() async throws {
        let fixture = try await QueueFixture.make()
        try await fixture.enqueue(1)
        let client = fixture.client
        // A cached payload holds only while the pool opens no new session (see the test above):
        // open all four now, so the test's own queries beside the worker do not grow the pool.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<4 { group.addTask { _ = try await client.query("SELECT pg_sleep(0.2)") } }
            try await group.waitForAll()
        }
        let sessions = client.sessionsOpened
        let seen = Mutex<[String]>([])
        let worker = fixture.worker(ScriptedHandler { job in
            seen.withLock { $0.append(job.payload) }
            guard job.attempts == 1 else { return .finish(.done, "acknowledged") }
            // Were the next claim to send the payload, it would send this one.
            _ = try? await client.query("UPDATE iap.job_requests SET payload = 'changed' WHERE id = $1", [job.id])
            return .retry("apple_unreachable")
        }) { $0.concurrency = 1 }
        let run = Task { await worker.run() }
        let done = try await fixture.eventually { try await fixture.states()["done"] == 1 }
        worker.shutdown()
        await run.value
        XCTAssertTrue(done)
        XCTAssertEqual(client.sessionsOpened, sessions, "the pool opened a session during the run")
        XCTAssertEqual(seen.withLock { $0 }, ["cGF5bG9hZA==", "cGF5bG9hZA=="])
        await client.close()
    }
}

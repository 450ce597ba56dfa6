import EmbeddedPostgres
import Foundation
import Observability
import Postgres
import Queue
import Synchronization
import XCTest

/// A COMMIT whose reply is lost is an unknown outcome, resolved before anything is
/// announced; and jobs leased to a worker that it does not know of are handed back at once.
final class AmbiguousCommitTests: XCTestCase {
    /// Settles every job as credited; records what it was told committed or rolled back.
    /// `onSettle` runs inside the completion transaction, before its COMMIT goes out.
    final class RecordingHandler: JobHandler, Sendable {
        let extraWrite: String?
        let onSettle: @Sendable (Int) -> Void
        let settles = Atomic<Int>(0)
        let committed = Mutex<[Int]>([])
        let rolledBack = Mutex<[Int]>([])

        init(extraWrite: String? = nil, onSettle: @escaping @Sendable (Int) -> Void = { _ in }) {
            self.extraWrite = extraWrite
            self.onSettle = onSettle
        }

        func verify(_ job: ClaimedJob) async -> Verification<Int> { .settle(job.id) }

        func settle(_ items: [SettlementItem<Int>], on connection: PostgresConnection) async throws -> SettledBatch {
            let call = settles.add(1, ordering: .relaxed).newValue
            onSettle(call)
            return SettledBatch(outcomes: items.map { _ in .finish(.done, "credited") },
                                writes: extraWrite.map { [PostgresStatement($0)] } ?? [])
        }

        func didCommit(_ runs: [JobRun]) { committed.withLock { $0 += runs.map(\.jobID) } }
        func didRollBack(_ runs: [JobRun]) { rolledBack.withLock { $0 += runs.map(\.jobID) } }
    }

    private func proxiedFixture() async throws -> (QueueFixture, FaultProxy, QueueStore) {
        let fixture = try await QueueFixture.make()
        let proxy = try FaultProxy(targetPort: try XCTUnwrap(URLComponents(string: fixture.url)?.port))
        var configuration = PostgresConfiguration(conninfo: proxy.url(replacingIn: fixture.url), applicationName: "ambiguous-test")
        configuration.callTimeout = 1.5
        configuration.connectTimeout = 2
        configuration.idleInTransactionTimeout = 1
        return (fixture, proxy, QueueStore(client: PostgresClient(configuration: configuration, maxConnections: 3)))
    }

    private func worker<H: JobHandler>(_ fixture: QueueFixture, _ store: QueueStore, _ handler: H,
                                       witnessRetention: Double = 604_800) -> QueueWorker {
        var configuration = QueueConfiguration()
        configuration.witnessRetention = witnessRetention
        configuration.pollInterval = 0.1
        configuration.concurrency = 4
        configuration.claimBatch = 4
        configuration.leaseSeconds = 60 // far longer than the test: nothing may wait for a lease to expire
        return QueueWorker(store: store, handler: handler, configuration: configuration, logger: fixture.logger,
                           metrics: QueueMetrics(registry: fixture.registry), listenerConninfo: nil)
    }

    private func events(_ fixture: QueueFixture, _ name: String) -> [String] {
        fixture.logs.lines.filter { $0.contains("event=\(name) ") || $0.hasSuffix("event=\(name)") }
    }

    func testACommitThatLandedIsAnnouncedOnceThoughItsReplyWasLost() async throws {
        let (fixture, proxy, store) = try await proxiedFixture()
        defer { proxy.stop() }
        try await fixture.enqueue(1)
        // The COMMIT goes out with a slow statement before it; the link freezes while the server
        // works, so the server commits and its reply never arrives.
        let handler = RecordingHandler(extraWrite: "SELECT pg_sleep(0.6)") { call in
            guard call == 1 else { return }
            Task {
                try? await Task.sleep(for: .milliseconds(200))
                proxy.freezeOpenConnections()
            }
        }
        let worker = worker(fixture, store, handler)
        let run = Task { await worker.run() }
        let done = try await fixture.eventually(30) { try await fixture.states()["done"] == 1 }
        let announced = try await fixture.eventually(30) { handler.committed.withLock { $0.count } == 1 }
        worker.shutdown()
        await run.value
        XCTAssertTrue(done && announced, "\(fixture.logs.lines.joined(separator: "\n"))")
        XCTAssertEqual(handler.settles.load(ordering: .relaxed), 1, "what committed is not settled again")
        XCTAssertEqual(handler.rolledBack.withLock { $0 }, [])
        XCTAssertEqual(events(fixture, "commit_resolved").count, 1)
        XCTAssertTrue(events(fixture, "commit_resolved").first?.contains("outcome=committed") == true)
        XCTAssertEqual(events(fixture, "job_finished").count, 1)
        XCTAssertEqual(events(fixture, "lease_lost").count, 0)
        await store.client.close()
        await fixture.client.close()
    }

    func testACommitThatNeverArrivedIsFencedOffAndRetried() async throws {
        let (fixture, proxy, store) = try await proxiedFixture()
        defer { proxy.stop() }
        try await fixture.enqueue(1)
        // The link freezes before the COMMIT goes out: the server never sees it.
        let handler = RecordingHandler { call in if call == 1 { proxy.freezeOpenConnections() } }
        let worker = worker(fixture, store, handler)
        let run = Task { await worker.run() }
        let done = try await fixture.eventually(30) { try await fixture.states()["done"] == 1 }
        worker.shutdown()
        await run.value
        XCTAssertTrue(done, "\(fixture.logs.lines.joined(separator: "\n"))")
        let jobID = try await fixture.client.query("SELECT id FROM iap.jobs")[0].decode(Int.self, at: 0)
        XCTAssertEqual(handler.rolledBack.withLock { $0 }, [jobID], "the first try is known not to have committed")
        XCTAssertEqual(handler.committed.withLock { $0 }, [jobID], "the second committed, once")
        XCTAssertEqual(handler.settles.load(ordering: .relaxed), 2)
        XCTAssertTrue(events(fixture, "commit_resolved").first?.contains("outcome=rolled_back") == true,
                      "\(events(fixture, "commit_resolved"))")
        let tombstones = try await fixture.client.query("SELECT count(*) FROM iap.commit_witness WHERE job_ids IS NULL AND lost_ids IS NULL")[0]
        XCTAssertEqual(try tombstones.decode(Int.self, at: 0), 1, "the lost transaction can never commit now")
        await store.client.close()
        await fixture.client.close()
    }

    /// Past half the witnesses' retention the witness may be gone (a worker cut off for days):
    /// the jobs' own state says what committed, and no tombstone is written.
    func testALostReplyPastTheWitnessRetentionIsResolvedByTheJobsState() async throws {
        let (fixture, proxy, store) = try await proxiedFixture()
        defer { proxy.stop() }
        try await fixture.enqueue(1)
        let client = fixture.client
        let handler = RecordingHandler(extraWrite: "SELECT pg_sleep(0.6)") { call in
            guard call == 1 else { return }
            Task {
                try? await Task.sleep(for: .milliseconds(200))
                proxy.freezeOpenConnections()
                // Committed by now; the worker still waits for the reply. The cleaner takes the witness.
                try? await Task.sleep(for: .milliseconds(900))
                _ = try? await client.query("DELETE FROM iap.commit_witness")
            }
        }
        // The reply waits for the 1.5 s call deadline: well past half of a 1 s retention.
        let worker = worker(fixture, store, handler, witnessRetention: 1)
        let run = Task { await worker.run() }
        let announced = try await fixture.eventually(30) { handler.committed.withLock { $0.count } == 1 }
        worker.shutdown()
        await run.value
        XCTAssertTrue(announced, "\(fixture.logs.lines.joined(separator: "\n"))")
        XCTAssertEqual(handler.settles.load(ordering: .relaxed), 1, "what committed is not settled again")
        XCTAssertEqual(handler.rolledBack.withLock { $0 }, [])
        XCTAssertTrue(events(fixture, "commit_resolved").first?.contains("outcome=committed") == true,
                      "\(events(fixture, "commit_resolved"))")
        XCTAssertEqual(events(fixture, "job_finished").count, 1)
        let tombstones = try await fixture.client.query("SELECT count(*) FROM iap.commit_witness WHERE job_ids IS NULL AND lost_ids IS NULL")[0]
        XCTAssertEqual(try tombstones.decode(Int.self, at: 0), 0)
        await store.client.close()
        await fixture.client.close()
    }

    func testJobsLeasedToTheWorkerButUnknownToItAreHandedBackAfterAReconnect() async throws {
        let (fixture, proxy, store) = try await proxiedFixture()
        defer { proxy.stop() }
        let handler = RecordingHandler()
        let worker = worker(fixture, store, handler)
        let run = Task { await worker.run() }
        try await fixture.enqueue(3)
        _ = try await fixture.eventually(30) { try await fixture.states()["done"] == 3 }
        // A claim whose reply was lost: the jobs are leased to this worker for an hour, and it
        // never heard of them. Enqueued and leased in one transaction, as such a claim commits:
        // the running worker must not claim them first (nor deadlock with the lease by hand).
        let workerID = worker.configuration.workerID
        try await fixture.client.transaction { connection in
            try await fixture.enqueue(5, prefix: "orphan", on: connection)
            _ = try await connection.query("""
                UPDATE iap.jobs SET state = 'running', attempts = 1, leased_by = $1, lease_expires_at = now() + interval '1 hour'
                WHERE order_id LIKE 'orphan-%'
                """, [workerID])
            // The lost claim's lease row (migration 0029) committed with it.
            _ = try await connection.query("""
                INSERT INTO iap.job_leases (leased_by, expires_at, job_ids)
                SELECT $1, now() + interval '1 hour', array_agg(id) FROM iap.job_queue WHERE leased_by = $1 AND state = 'running'
                """, [workerID])
        }
        _ = proxy.resetConnections() // the pool reconnects
        let done = try await fixture.eventually(20) { try await fixture.states()["done"] == 8 }
        worker.shutdown()
        await run.value
        let states = try await fixture.states()
        XCTAssertTrue(done, "orphaned leases did not wait out their hour: \(states)")
        XCTAssertFalse(events(fixture, "leases_handed_back").isEmpty)
        let attempts = try await fixture.client.query("SELECT max(attempts) FROM iap.jobs WHERE order_id LIKE 'orphan-%'")[0]
        XCTAssertEqual(try attempts.decode(Int.self, at: 0), 1, "handing back spends no attempt")
        await store.client.close()
        await fixture.client.close()
    }
}

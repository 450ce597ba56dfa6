import Foundation
import Postgres
import Queue
import Synchronization
import TestSupport
import XCTest

/// Migrations 0022–0024 split iap.jobs into iap.job_queue and iap.job_requests on a
/// populated database while enqueues and workers keep running, from two `migrate` processes at
/// once, and again afterwards.
final class LiveJobsSplitMigrationTests: XCTestCase {
    static let splitVersion = 22

    // The SQL of a worker built before the split (QueueStore as of migration 0021), which keeps
    // running through the switch and afterwards writes through the iap.jobs view.
    static let preSplitClaimSQL = """
        WITH picked AS (
            SELECT id FROM iap.jobs WHERE state IN ('queued', 'retrying') AND run_at <= now()
            ORDER BY run_at, id LIMIT $1 FOR UPDATE SKIP LOCKED
        )
        UPDATE iap.jobs AS j SET state = 'running', attempts = j.attempts + 1, leased_by = $2,
            lease_expires_at = now() + make_interval(secs => $3)
        FROM picked WHERE j.id = picked.id
        RETURNING j.id, j.kind, j.user_id, j.order_id, j.product_id, j.payload, j.attempts, j.created_at, j.sweeps
        """
    static let preSplitLockSQL = """
        SELECT id FROM iap.jobs WHERE id = ANY($1::bigint[]) AND leased_by = $2 AND lease_expires_at > now() FOR UPDATE
        """
    static let preSplitCompleteSQL = """
        UPDATE iap.jobs AS j SET state = $3, outcome = $4, run_at = now(),
            finished_at = CASE WHEN $3 IN ('done', 'failed', 'attention') THEN now() END, leased_by = NULL, lease_expires_at = NULL
        WHERE j.id = ANY($1::bigint[]) AND j.leased_by = $2 AND j.lease_expires_at > now()
        RETURNING j.id
        """

    /// What the background enqueuer and worker saw.
    final class Journal: Sendable {
        let enqueued = Mutex<[Int: String]>([:])   // job id → payload
        let finished = Mutex<Set<Int>>([])
        let deleted = Mutex<Set<Int>>([])
        let errors = Mutex<[String]>([])
        let stop = Atomic<Bool>(false)
    }

    func testSplittingALiveQueue() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        let all = try Migrator(directory: TestDatabase.migrationsDirectory).migrations
        let before = Migrator(migrations: all.filter { $0.version < Self.splitVersion })
        let setup = try await PostgresConnection.connect(url)
        _ = try await before.migrate(setup)
        let client = PostgresClient(conninfo: url, maxConnections: 4)

        // 20,000 jobs, the web tier's way (u-N, o-N, receipt-N), 1,000 of them submitted twice.
        var original: [Int: String] = [:]
        for chunk in stride(from: 0, to: 20_000, by: 5_000) {
            let numbers = Array(chunk..<chunk + 5_000)
            let rows = try await client.query("""
                SELECT job_id FROM iap.enqueue_jobs($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) ORDER BY ordinal
                """, [numbers.map { _ in "receipt" }, numbers.map { "u-\($0 % 700)" }, numbers.map { "o-\($0)" },
                      numbers.map { _ in String?.none }, numbers.map { "receipt-\($0)" }])
            for (number, row) in zip(numbers, rows) { original[try row.decode(Int.self, at: 0)] = "receipt-\(number)" }
        }
        XCTAssertEqual(original.count, 20_000)
        let resubmitted = try await Self.enqueueReceipt(client, number: 1_234)
        XCTAssertEqual(original[resubmitted], "receipt-1234", "a repeat returns the existing job")

        // Some finished, some waiting for a human, some retrying, some held by a worker that died.
        let ids = original.keys.sorted()
        try await setStates(client, ids: Array(ids[0..<500]), state: "done", outcome: "credited")
        try await setStates(client, ids: Array(ids[500..<600]), state: "attention", outcome: "paid_not_credited")
        try await setStates(client, ids: Array(ids[600..<700]), state: "retrying", outcome: nil)
        _ = try await client.query("""
            UPDATE iap.jobs SET state = 'running', leased_by = 'dead-worker', lease_expires_at = now() + interval '1 second', attempts = 1
            WHERE id = ANY($1::bigint[])
            """, [Array(ids[700..<800])])
        let finishedBefore = try await states(client, Array(ids[300..<600]))

        let journal = Journal()
        journal.enqueued.withLock { $0 = original }
        let enqueuer = Task { [client, journal] in await LiveJobsSplitMigrationTests.keepEnqueueing(client, journal: journal) }
        let worker = Task { [url, journal] in await LiveJobsSplitMigrationTests.keepWorkingWithPreSplitSQL(url, journal: journal) }
        let retention = Task { [client, journal] in
            await LiveJobsSplitMigrationTests.keepDeletingWithPreSplitSQL(client, ids: Array(ids[0..<300]), journal: journal)
        }
        try await Task.sleep(for: .milliseconds(300))

        // Two `migrate` processes at once, each on its own session, then a third run.
        let migrator = Migrator(migrations: all)
        let applied = try await withThrowingTaskGroup(of: [Int].self) { group in
            for _ in 0..<2 {
                group.addTask {
                    let connection = try await PostgresConnection.connect(url)
                    defer { Task { await connection.close() } }
                    return try await migrator.migrate(connection)
                }
            }
            var versions: [Int] = []
            for try await applied in group { versions += applied }
            return versions.sorted()
        }
        XCTAssertEqual(applied, all.map(\.version).filter { $0 >= Self.splitVersion })
        let again = try await migrator.migrate(setup)
        XCTAssertEqual(again, [])

        try await Task.sleep(for: .milliseconds(300))
        journal.stop.store(true, ordering: .relaxed)
        await enqueuer.value
        await worker.value
        await retention.value
        let deleted = journal.deleted.withLock { $0 }
        var enqueued = journal.enqueued.withLock { $0 }
        for id in deleted { enqueued[id] = nil }
        XCTAssertGreaterThan(enqueued.count, 20_000, "enqueues carried on through the migration")
        XCTAssertFalse(journal.finished.withLock { $0 }.isEmpty, "the pre-split worker finished jobs")
        // Nothing failed: not an enqueue caught waiting on the switch's lock (0022's enqueue_jobs
        // works on the table and on the view), not the old worker's SQL (the view's triggers).
        let errors = journal.errors.withLock { $0 }
        print("live split: \(enqueued.count - 20_000) enqueued and \(journal.finished.withLock { $0 }.count) finished by the pre-split worker meanwhile")
        XCTAssertEqual(errors, [])

        // Every job once, with its request.
        let jobIDs = enqueued.keys.sorted()
        let found = try await client.query("""
            SELECT count(*), count(DISTINCT j.id), count(*) FILTER (WHERE j.payload = w.payload AND j.user_id = 'u-' || (substr(w.payload, 9)::int % 700)
                                                                     AND j.order_id = 'o-' || substr(w.payload, 9))
            FROM unnest($1::bigint[], $2::text[]) AS w(id, payload) JOIN iap.jobs j ON j.id = w.id
            """, [jobIDs, jobIDs.map { enqueued[$0]! }])[0]
        XCTAssertEqual(try found.decode(Int.self, at: 0), jobIDs.count)
        XCTAssertEqual(try found.decode(Int.self, at: 1), jobIDs.count)
        XCTAssertEqual(try found.decode(Int.self, at: 2), jobIDs.count, "payload, user and order kept")
        let tables = try await client.query("SELECT (SELECT count(*) FROM iap.job_queue), (SELECT count(*) FROM iap.job_requests)")[0]
        XCTAssertEqual(try tables.decode(Int.self, at: 0), jobIDs.count)
        XCTAssertEqual(try tables.decode(Int.self, at: 1), jobIDs.count)

        // Dedup holds across the switch, and finished jobs kept their state.
        let repeatID = try await Self.enqueueReceipt(client, number: 1_234)
        XCTAssertEqual(original[repeatID], "receipt-1234")
        let finishedAfter = try await states(client, Array(ids[300..<600]))
        XCTAssertEqual(finishedAfter, finishedBefore)

        // Deleted jobs are gone from both tables, and their dedup key with them: a resubmission is a new job.
        XCTAssertFalse(deleted.isEmpty)
        let leftovers = try await client.query("""
            SELECT (SELECT count(*) FROM iap.job_queue WHERE id = ANY($1::bigint[])) + (SELECT count(*) FROM iap.job_requests WHERE id = ANY($1::bigint[]))
            """, [Array(deleted)])[0].decode(Int.self, at: 0)
        XCTAssertEqual(leftovers, 0)
        let gone = deleted.min()!
        let number = Int(original[gone]!.dropFirst("receipt-".count))!
        let afterDeletion = try await Self.enqueueReceipt(client, number: number)
        XCTAssertNotEqual(afterDeletion, gone)
        let payload = try await client.query("SELECT payload FROM iap.jobs WHERE id = $1", [afterDeletion])[0].decode(String.self, at: 0)
        XCTAssertEqual(payload, original[gone])

        // A worker of the new build drains the rest, the dead worker's jobs once their lease ends.
        let store = QueueStoreDriver(client: client)
        try await store.drain()
        let unfinished = try await client.query("SELECT count(*) FROM iap.jobs WHERE state NOT IN ('done', 'failed', 'attention')")[0]
        XCTAssertEqual(try unfinished.decode(Int.self, at: 0), 0)
        // The side tables (0029) name exactly the jobs in their states, whichever build moved them.
        let mismatched = try await client.query("""
            SELECT (SELECT count(*) FROM iap.job_queue j FULL JOIN iap.job_ready r USING (id)
                    WHERE (j.state IN ('queued', 'retrying')) IS DISTINCT FROM (r.id IS NOT NULL AND j.state = r.state))
                 + (SELECT count(*) FROM iap.job_queue j FULL JOIN iap.job_parked p USING (id)
                    WHERE (j.state = 'timed_out') IS DISTINCT FROM (p.id IS NOT NULL))
                 + (SELECT count(*) FROM iap.job_queue j FULL JOIN iap.job_flagged f USING (id)
                    WHERE (j.state IN ('attention', 'failed')) IS DISTINCT FROM (f.id IS NOT NULL AND j.state = f.state
                          AND f.owed_transaction_ids IS NOT DISTINCT FROM CASE WHEN j.outcome = 'paid_not_credited' THEN j.transaction_ids END))
            """)[0].decode(Int.self, at: 0)
        XCTAssertEqual(mismatched, 0)

        // The console's searches still walk indexes.
        for (sql, index) in [("SELECT id FROM iap.jobs WHERE user_id = $1 ORDER BY id DESC LIMIT 50", "job_requests_by_user"),
                             ("SELECT id FROM iap.jobs WHERE order_id = $1 ORDER BY id DESC LIMIT 2", "job_requests_by_order")] {
            _ = try await client.query("ANALYZE iap.job_requests")
            let plan = try await client.query("EXPLAIN " + sql, ["u-7"]).map { try $0.decode(String.self, at: 0) }.joined(separator: "\n")
            XCTAssertTrue(plan.contains(index), plan)
            XCTAssertFalse(plan.contains("Seq Scan"), plan)
        }
        let invalid = try await client.query("""
            SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
            JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'iap' AND NOT i.indisvalid
            """)[0].decode(Int.self, at: 0)
        XCTAssertEqual(invalid, 0)
        await setup.close()
        await client.close()
    }

    private static func enqueueReceipt(_ client: PostgresClient, number: Int) async throws -> Int {
        try await client.query("SELECT iap.enqueue_receipt($1, $2, $3)", ["u-\(number % 700)", "o-\(number)", "receipt-\(number)"])[0]
            .decode(Int.self, at: 0)
    }

    private func setStates(_ client: PostgresClient, ids: [Int], state: String, outcome: String?) async throws {
        _ = try await client.query("""
            UPDATE iap.jobs SET state = $2, outcome = $3, attempts = 1,
                finished_at = CASE WHEN $2 IN ('done', 'failed', 'attention') THEN now() END
            WHERE id = ANY($1::bigint[])
            """, [ids, state, outcome])
    }

    private func states(_ client: PostgresClient, _ ids: [Int]) async throws -> [String] {
        try await client.query("SELECT id || ':' || state || ':' || coalesce(outcome, '-') FROM iap.jobs WHERE id = ANY($1::bigint[]) ORDER BY id",
                               [ids]).map { try $0.decode(String.self, at: 0) }
    }

    /// The web tier: one receipt at a time through iap.enqueue_receipt, every tenth a repeat.
    private static func keepEnqueueing(_ client: PostgresClient, journal: Journal) async {
        var number = 20_000
        while !journal.stop.load(ordering: .relaxed) {
            let repeatOf = number % 10 == 0 ? number - 5 : number
            do {
                let id = try await Self.enqueueReceipt(client, number: repeatOf)
                let payload = "receipt-\(repeatOf)"
                let known = journal.enqueued.withLock { enqueued in
                    defer { enqueued[id] = payload }
                    return enqueued[id]
                }
                if let known, known != payload { journal.errors.withLock { $0.append("job \(id) is \(known) and \(payload)") } }
                number += 1
            } catch {
                journal.errors.withLock { $0.append("enqueue: \(error)") }
            }
        }
    }

    /// Retention of the previous build: finished jobs deleted through iap.jobs, ten at a time.
    private static func keepDeletingWithPreSplitSQL(_ client: PostgresClient, ids: [Int], journal: Journal) async {
        var next = 0
        while !journal.stop.load(ordering: .relaxed), next < ids.count {
            let chunk = Array(ids[next..<min(next + 10, ids.count)])
            do {
                let gone = try await client.query("DELETE FROM iap.jobs WHERE id = ANY($1::bigint[]) AND state = 'done' RETURNING id", [chunk])
                    .map { try $0.decode(Int.self, at: 0) }
                journal.deleted.withLock { $0.formUnion(gone) }
                next += 10
                try await Task.sleep(for: .milliseconds(40)) // spread over the migration
            } catch {
                journal.errors.withLock { $0.append("pre-split retention: \(error)") }
            }
        }
    }

    /// A worker of the previous build: claim 50, finish them done, through iap.jobs.
    private static func keepWorkingWithPreSplitSQL(_ url: String, journal: Journal) async {
        guard let connection = try? await PostgresConnection.connect(url) else {
            journal.errors.withLock { $0.append("worker: no connection") }
            return
        }
        while !journal.stop.load(ordering: .relaxed) {
            do {
                let claimed = try await connection.query(Self.preSplitClaimSQL, [50, "old-worker", 60.0]).map { try $0.decode(Int.self, at: 0) }
                if claimed.isEmpty { try await Task.sleep(for: .milliseconds(10)); continue }
                let written = try await connection.transaction { tx in
                    let owned = try await tx.query(Self.preSplitLockSQL, [claimed, "old-worker"]).map { try $0.decode(Int.self, at: 0) }
                    XCTAssertEqual(Set(owned), Set(claimed))
                    return try await tx.query(Self.preSplitCompleteSQL, [claimed, "old-worker", "done", "acknowledged"])
                        .map { try $0.decode(Int.self, at: 0) }
                }
                XCTAssertEqual(Set(written), Set(claimed))
                journal.finished.withLock { $0.formUnion(written) }
            } catch {
                journal.errors.withLock { $0.append("pre-split worker: \(error)") }
            }
        }
        await connection.close()
    }
}

/// The new build's queue (QueueStore), driven to the end: rescue expired leases, claim, finish.
private struct QueueStoreDriver {
    let client: PostgresClient

    func drain() async throws {
        let store = QueueStore(client: client)
        // As its leader does on taking office: jobs an enqueue of the previous build inserted while
        // migration 0039 dropped the trigger it relied on have no ready row yet.
        _ = try await store.placeStrayJobs()
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            _ = try await store.rescueExpiredLeases(maxAttempts: 10)
            while true {
                let claimed = try await store.claim(limit: 1_000, workerID: "new-worker", leaseSeconds: 60)
                if claimed.isEmpty { break }
                _ = try await store.completeDone(claimed.map(\.id), outcome: "acknowledged", workerID: "new-worker")
            }
            let left = try await client.query("SELECT count(*) FROM iap.job_queue WHERE state NOT IN ('done', 'failed', 'attention')")[0]
                .decode(Int.self, at: 0)
            if left == 0 { return }
            try await Task.sleep(for: .milliseconds(200))
        }
    }
}

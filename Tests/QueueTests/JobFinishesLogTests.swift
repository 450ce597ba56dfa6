import Foundation
import Postgres
import Queue
import Synchronization
import TestSupport
import XCTest

/// Migration 0028: every completion logs what it finished, per (state, outcome), in its own
/// transaction; what it did not write (a lease lost) and what is not finished (a retry) is not logged.
final class JobFinishesLogTests: XCTestCase {
    func testTheLogCountsWhatCompletionsFinishedPerStateAndOutcome() async throws {
        let fixture = try await QueueFixture.make()
        try await fixture.enqueue(300)
        let firstTries = Mutex<Set<Int>>([])
        let worker = fixture.worker(ScriptedHandler { job in
            switch job.id % 3 {
            case 0: return .finish(.failed, "invalid_receipt")
            case 1:
                // Every tenth credit needs a second attempt.
                if job.id % 10 == 1, firstTries.withLock({ $0.insert(job.id).inserted }) { return .retry("http_503", appleStatus: 503) }
                return .finish(.done, "credited")
            default: return .finish(.attention, "paid_not_credited")
            }
        }) {
            $0.concurrency = 40
            $0.claimBatch = 50
            $0.retryPolicy = .schedule([0.05])
        }
        let run = Task { await worker.run() }
        let finished = try await fixture.eventually {
            let states = try await fixture.states()
            return states["done", default: 0] + states["failed", default: 0] + states["attention", default: 0] == 300
        }
        worker.shutdown()
        await run.value
        XCTAssertTrue(finished)

        let jobs = try await Self.counts(fixture.client, """
            SELECT state, outcome, count(*)::bigint, count(*) FILTER (WHERE attempts > 1)::bigint FROM iap.jobs GROUP BY 1, 2
            """)
        let logged = try await Self.counts(fixture.client, """
            SELECT state, outcome, sum(jobs)::bigint, sum(retried)::bigint FROM iap.job_finishes GROUP BY 1, 2
            """)
        XCTAssertEqual(logged, jobs)
        XCTAssertEqual(logged["done/credited"]?.jobs, 100)
        XCTAssertEqual(logged["done/credited"]?.retried, 10, "the retried credits are counted as such, once")
        XCTAssertEqual(logged["failed/invalid_receipt"]?.jobs, 100)
        XCTAssertEqual(logged["attention/paid_not_credited"]?.jobs, 100)
        // Batched: far fewer rows than jobs.
        let rows = try await fixture.client.query("SELECT count(*)::bigint FROM iap.job_finishes")[0].decode(Int.self, at: 0)
        XCTAssertLessThan(rows, 300)
        await fixture.client.close()
    }

    func testACompletionWithoutTheLeaseLogsNothing() async throws {
        let fixture = try await QueueFixture.make()
        try await fixture.enqueue(5)
        let claimed = try await fixture.store.claim(limit: 5, workerID: "w-1", leaseSeconds: 60)
        XCTAssertEqual(claimed.count, 5)
        let stolen = try await fixture.store.completeDone(claimed.map(\.id), outcome: "credited", workerID: "w-2")
        XCTAssertEqual(stolen, 0)
        let none = try await fixture.client.query("SELECT count(*)::bigint FROM iap.job_finishes")[0].decode(Int.self, at: 0)
        XCTAssertEqual(none, 0)
        let written = try await fixture.store.completeDone(claimed.map(\.id), outcome: "credited", workerID: "w-1")
        XCTAssertEqual(written, 5)
        let row = try await fixture.client.query("SELECT state, outcome, jobs, retried FROM iap.job_finishes")
        XCTAssertEqual(row.count, 1)
        XCTAssertEqual(try row[0].decode(String.self, at: 0), "done")
        XCTAssertEqual(try row[0].decode(String.self, at: 1), "credited")
        XCTAssertEqual(try row[0].decode(Int.self, at: 2), 5)
        XCTAssertEqual(try row[0].decode(Int.self, at: 3), 0)
        await fixture.client.close()
    }

    /// Migrations 0041–0042: a batch of `done` results is written by `iap.complete_done_jobs`, which
    /// writes nothing when a lease of the batch was lost; the batch is then written by the
    /// completion statement, and only the jobs still leased are finished, logged and announced.
    func testABatchOfDoneResultsWithALostLeaseFinishesTheRestOnce() async throws {
        let fixture = try await QueueFixture.make()
        var stolen = 0
        let finished = try await runFiveHeldJobs(fixture, meanwhile: {
            // One job's lease passes to another worker (as after an expiry and a rescue) while it runs here.
            stolen = try await fixture.client.query("""
                UPDATE iap.job_queue SET leased_by = 'other', lease_expires_at = now() + interval '30 seconds'
                WHERE id = (SELECT min(id) FROM iap.job_queue) RETURNING id
                """)[0].decode(Int.self, at: 0)
        }, until: { try await fixture.states()["done"] == 4 && fixture.logs.lines.contains { $0.contains("event=lease_lost") } })
        XCTAssertTrue(finished, "\(fixture.logs.lines.joined(separator: "\n"))")
        let logged = try await Self.counts(fixture.client, "SELECT state, outcome, sum(jobs)::bigint, sum(retried)::bigint FROM iap.job_finishes GROUP BY 1, 2")
        XCTAssertEqual(logged, ["done/credited": Counted(jobs: 4, retried: 0)])
        XCTAssertEqual(fixture.logs.lines.filter { $0.contains("event=job_finished") }.count, 4)
        XCTAssertEqual(fixture.logs.lines.filter { $0.contains("event=lease_lost") && $0.contains("job_id=\(stolen)") }.count, 1)
        let row = try await fixture.client.query("SELECT state, leased_by FROM iap.job_queue WHERE id = $1", [stolen])[0]
        XCTAssertEqual(try row.decode(String.self, at: 0), "running")
        XCTAssertEqual(try row.decode(String?.self, at: 1), "other")
        let witnesses = try await fixture.client.query("SELECT lost_ids FROM iap.commit_witness WHERE cardinality(lost_ids) > 0")
        XCTAssertEqual(try witnesses.map { try $0.decode([Int].self, at: 0) }, [[stolen]], "the batch's witness names the job it did not write")
        await fixture.client.close()
    }

    /// Migration 0042: the function finds a batch's rows by the row versions the claim returned.
    /// A row written since (here by hand; its lease untouched) is not found there: the batch is
    /// written again by the completion statement, by key, and every job finishes once, none lost.
    func testABatchOfDoneResultsWithARowWrittenSinceItsClaimFinishesEveryJobOnce() async throws {
        let fixture = try await QueueFixture.make()
        let finished = try await runFiveHeldJobs(fixture, meanwhile: {
            _ = try await fixture.client.query("UPDATE iap.job_queue SET sweeps = sweeps WHERE id = (SELECT min(id) FROM iap.job_queue)")
        }, until: { try await fixture.states()["done"] == 5 })
        XCTAssertTrue(finished, "\(fixture.logs.lines.joined(separator: "\n"))")
        let logged = try await Self.counts(fixture.client, "SELECT state, outcome, sum(jobs)::bigint, sum(retried)::bigint FROM iap.job_finishes GROUP BY 1, 2")
        XCTAssertEqual(logged, ["done/credited": Counted(jobs: 5, retried: 0)])
        XCTAssertEqual(fixture.logs.lines.filter { $0.contains("event=job_finished") }.count, 5)
        XCTAssertEqual(fixture.logs.lines.filter { $0.contains("event=lease_lost") }.count, 0)
        let witnesses = try await fixture.client.query("SELECT lost_ids FROM iap.commit_witness")
        XCTAssertEqual(try witnesses.map { try $0.decode([Int].self, at: 0) }, [[]], "one batch, committed once, nothing lost")
        await fixture.client.close()
    }

    /// Five jobs claimed in one batch and held running while `meanwhile` runs, then all finished
    /// `done`; the worker stops once `until` holds (true) or after 30 s (false).
    private func runFiveHeldJobs(_ fixture: QueueFixture, meanwhile: () async throws -> Void,
                                 until finished: () async throws -> Bool) async throws -> Bool {
        let holding = try await fixture.workerHoldingFive {
            $0.concurrency = 5
            $0.claimBatch = 5
            $0.completionLinger = 0.2
        }
        let (held, worker, run) = try XCTUnwrap(holding, "the five jobs start")
        try await meanwhile()
        held.release()
        let done = try await fixture.eventually { try await finished() }
        worker.shutdown()
        await run.value
        return done
    }

    /// A worker of the new build on a database not yet migrated to 0042 (rolled out before
    /// `migrate`) writes its batches with the completion statement, and says so once.
    func testWithoutTheDoneFunctionBatchesAreWrittenByTheCompletionStatement() async throws {
        let fixture = try await QueueFixture.make()
        _ = try await fixture.client.query("DROP FUNCTION iap.complete_done_jobs")
        try await fixture.enqueue(30)
        let worker = fixture.worker(ScriptedHandler { _ in .finish(.done, "credited") }) {
            $0.concurrency = 10
            $0.claimBatch = 10
        }
        let run = Task { await worker.run() }
        let finished = try await fixture.eventually { try await fixture.states()["done"] == 30 }
        worker.shutdown()
        await run.value
        XCTAssertTrue(finished, "\(fixture.logs.lines.joined(separator: "\n"))")
        XCTAssertEqual(fixture.logs.lines.filter { $0.contains("event=completion_function_missing") }.count, 1)
        XCTAssertEqual(fixture.logs.lines.filter { $0.contains("event=job_finished") }.count, 30)
        XCTAssertEqual(fixture.logs.lines.filter { $0.contains("event=lease_lost") }.count, 0)
        let logged = try await Self.counts(fixture.client, "SELECT state, outcome, sum(jobs)::bigint, sum(retried)::bigint FROM iap.job_finishes GROUP BY 1, 2")
        XCTAssertEqual(logged, ["done/credited": Counted(jobs: 30, retried: 0)])
        await fixture.client.close()
    }

    func testTheMigrationLogsTheLastDaysFinishedJobsOnce() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        let all = try Migrator(directory: TestDatabase.migrationsDirectory).migrations
        let connection = try await PostgresConnection.connect(url)
        _ = try await Migrator(migrations: all.filter { $0.version < 28 }).migrate(connection)
        _ = try await connection.query("""
            INSERT INTO iap.jobs (kind, user_id, order_id, payload, state, outcome, attempts, finished_at)
            SELECT 'receipt', 'u', 'o-' || i, 'r-' || i,
                   CASE WHEN i % 4 = 0 THEN 'failed' WHEN i % 4 = 1 THEN 'queued' ELSE 'done' END,
                   CASE WHEN i % 4 = 0 THEN 'invalid_receipt' WHEN i % 4 = 1 THEN NULL ELSE 'credited' END,
                   CASE WHEN i % 5 = 0 THEN 2 ELSE 1 END,
                   CASE WHEN i % 4 = 1 THEN NULL WHEN i <= 100 THEN now() - interval '2 days' ELSE now() - (i || ' seconds')::interval END
            FROM generate_series(1, 400) AS i
            """)
        _ = try await Migrator(migrations: all).migrate(connection)
        _ = try await Migrator(migrations: all).migrate(connection)
        let logged = try await connection.query("""
            SELECT state, sum(jobs)::bigint, sum(retried)::bigint FROM iap.job_finishes GROUP BY 1 ORDER BY 1
            """).map { "\(try $0.decode(String.self, at: 0)) \(try $0.decode(Int.self, at: 1)) \(try $0.decode(Int.self, at: 2))" }
        // Jobs 101–400 finished within the day: 150 done, 75 failed; a fifth of them took two attempts.
        XCTAssertEqual(logged, ["done 150 30", "failed 75 15"])
        await connection.close()
    }

    private struct Counted: Equatable {
        let jobs: Int
        let retried: Int
    }

    private static func counts(_ client: PostgresClient, _ sql: String) async throws -> [String: Counted] {
        var result: [String: Counted] = [:]
        for row in try await client.query(sql) {
            result["\(try row.decode(String.self, at: 0))/\(try row.decode(String?.self, at: 1) ?? "-")"] =
                Counted(jobs: try row.decode(Int.self, at: 2), retried: try row.decode(Int.self, at: 3))
        }
        return result
    }
}

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

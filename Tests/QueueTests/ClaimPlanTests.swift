import Foundation
import Postgres
@testable import Queue
import TestSupport
import XCTest

/// A claim's cost follows its batch, not the table. Joined as a relation (`FROM picked JOIN …`),
/// the claim's 1,000 picked ids would be priced above a sequential scan, and every claim would
/// hash the whole of iap.job_queue and iap.job_requests (finished jobs included); the rescuer's
/// and the sweeper's updates share the shape and are checked too.
final class ClaimPlanTests: XCTestCase {
    func testClaimRescueAndSweepFindTheirJobsByPrimaryKey() async throws {
        let url = try await TestDatabase.fresh()
        let connection = try await PostgresConnection.connect(url)
        try await connection.insertReceiptJobs(20000)
        try await connection.execute(script: "ANALYZE iap.job_queue, iap.job_requests")
        let statements = [("claim", PostgresStatement(QueueStore.claimSQL, [1_000, "w", 60.0, [Int]()])),
                          ("claim from the even half", PostgresStatement(QueueStore.claimSQLByHalf[0], [1_000, "w", 60.0, [Int]()])),
                          ("claim from the odd half", PostgresStatement(QueueStore.claimSQLByHalf[1], [1_000, "w", 60.0, [Int]()])),
                          ("rescue", PostgresStatement(QueueStore.rescueSQL, [5, 1_000])),
                          ("sweep", PostgresStatement(QueueStore.sweepSQL, [10_000]))]
        for (name, statement) in statements {
            let plan = try await connection.transaction { tx in
                try await tx.pipeline([statement.explained()])[0].map { try $0.decode(String.self, at: 0) }
            }.joined(separator: "\n")
            XCTAssertFalse(plan.contains("Seq Scan"), "\(name):\n\(plan)")
            XCTAssertTrue(plan.contains("jobs_pkey"), "\(name):\n\(plan)")
            if name.hasPrefix("claim") { XCTAssertTrue(plan.contains("job_requests_pkey"), plan) }
        }
        // The worker runs the claim with one plan per session (`TransactionPlanning.reused`), made
        // without its parameters: it must find its rows by key too, whatever the batch.
        for half in [0, 1] {
            let plan = try await connection.transaction(planning: .reused) { tx in
                _ = try await tx.query("PREPARE claim_plan_\(half)(int, text, float8, bigint[]) AS " + QueueStore.claimSQLByHalf[half])
                return try await tx.query("EXPLAIN EXECUTE claim_plan_\(half)(1000, 'w', 60, '{}')").map { try $0.decode(String.self, at: 0) }
            }.joined(separator: "\n")
            XCTAssertFalse(plan.contains("Seq Scan"), plan)
            // Each half from its own index, the claim's own half first.
            let own = plan.range(of: half == 0 ? "job_ready_due_even_blocks" : "job_ready_due_odd_blocks")
            let other = plan.range(of: half == 0 ? "job_ready_due_odd_blocks" : "job_ready_due_even_blocks")
            XCTAssertNotNil(own, plan)
            XCTAssertNotNil(other, plan)
            if let own, let other { XCTAssertLessThan(own.lowerBound, other.lowerBound, plan) }
            _ = try await connection.query("DEALLOCATE claim_plan_\(half)")
        }
        let generic = try await connection.transaction(planning: .reused) { tx in
            _ = try await tx.query("PREPARE claim_plan(int, text, float8, bigint[]) AS " + QueueStore.claimSQL)
            return try await tx.query("EXPLAIN EXECUTE claim_plan(1000, 'w', 60, '{}')").map { try $0.decode(String.self, at: 0) }
        }.joined(separator: "\n")
        XCTAssertFalse(generic.contains("Seq Scan"), generic)
        XCTAssertTrue(generic.contains("Index Scan using job_ready_due on"), "the whole ready set in order:\n\(generic)")
        // The requests: one range of the key for a claim of dense ids, or one lookup per id.
        XCTAssertTrue(generic.range(of: #"Index Scan using job_requests_pkey on job_requests r(_\d+)?[^\n]*\s+Index Cond: \(\(id >= \$\d+\) AND \(id <= \$\d+\)\)"#,
                                    options: .regularExpression) != nil, "the requests read as a range:\n\(generic)")
        XCTAssertTrue(generic.range(of: #"Index Scan using job_requests_pkey on job_requests r(_\d+)?[^\n]*\s+Index Cond: \(id = ANY \(\$\d+\)\)"#,
                                    options: .regularExpression) != nil, "the requests read by id:\n\(generic)")
        XCTAssertTrue(generic.contains("jobs_pkey"), generic)
        _ = try await connection.query("DEALLOCATE claim_plan")
        // And the claim still claims: oldest first, each job once, with its request.
        let store = QueueStore(client: PostgresClient(conninfo: url))
        let first = try await store.claim(limit: 700, workerID: "w", leaseSeconds: 60)
        let second = try await store.claim(limit: 700, workerID: "w", leaseSeconds: 60)
        XCTAssertEqual(first.count, 700)
        XCTAssertEqual(Set(first.map(\.id)).intersection(second.map(\.id)), [])
        XCTAssertEqual(first.map(\.id), first.map(\.id).sorted())
        XCTAssertLessThan(first.last!.id, second.first!.id)
        XCTAssertEqual(first[0].userID, "u-1")
        XCTAssertEqual(first[0].payload, "cA==")
        XCTAssertEqual(first[0].attempts, 1)
        let leased = try await connection.query("SELECT count(*) FROM iap.job_queue WHERE state = 'running' AND leased_by = 'w'")[0]
        XCTAssertEqual(try leased.decode(Int.self, at: 0), 1_400)
        await store.client.close()
        await connection.close()
    }

    /// A claim beside another reads the ready set in two halves, even and odd blocks of 1,024 ids
    /// (migration 0044): the oldest of the half it starts in, then the oldest of the other.
    func testAClaimTakesTheOldestOfItsOwnHalfFirstThenOfTheOther() async throws {
        let url = try await TestDatabase.fresh()
        let connection = try await PostgresConnection.connect(url)
        try await connection.insertReceiptJobs(3000)
        let store = QueueStore(client: PostgresClient(conninfo: url))
        let ready = try await connection.query("SELECT id FROM iap.job_ready ORDER BY run_at, id").map { try $0.decode(Int.self, at: 0) }
        let even = ready.filter { $0 / 1024 % 2 == 0 }, odd = ready.filter { $0 / 1024 % 2 == 1 }
        XCTAssertGreaterThan(odd.count, 200, "both halves hold jobs")
        XCTAssertGreaterThan(even.count, 200)

        let first = try await store.claim(limit: 100, workerID: "w", leaseSeconds: 60, startingIn: 1)
        XCTAssertEqual(Set(first.map(\.id)), Set(odd.prefix(100)), "the oldest of the odd half")
        let second = try await store.claim(limit: odd.count - 100 + 50, workerID: "w", leaseSeconds: 60, startingIn: 1)
        XCTAssertEqual(Set(second.map(\.id)), Set(odd.dropFirst(100) + even.prefix(50)),
                       "the rest of the odd half, topped up with the oldest of the even one")
        let third = try await store.claim(limit: 10, workerID: "w", leaseSeconds: 60, startingIn: 0)
        XCTAssertEqual(Set(third.map(\.id)), Set(even.dropFirst(50).prefix(10)))
        // A claim of the whole set takes the oldest whatever their half.
        try await connection.execute(script: """
            UPDATE iap.job_ready SET run_at = run_at - interval '1 hour' WHERE id IN (SELECT max(id) FROM iap.job_ready)
            """)
        let newest = even.last!
        let whole = try await store.claim(limit: 3, workerID: "w", leaseSeconds: 60)
        XCTAssertEqual(whole.map(\.id), [even[60], even[61], newest].sorted(), "the oldest run_at first, then the lowest id")
        let left = try await connection.query("SELECT count(*) FROM iap.job_ready")[0].decode(Int.self, at: 0)
        XCTAssertEqual(left, even.count - 63)
        await store.client.close()
        await connection.close()
    }

    /// Each claimed job comes with its own request whichever way the requests are read: as a
    /// range, which passes over other jobs' requests between the claimed ids, or by id, when the
    /// ids spread too far for a range.
    func testAClaimGetsItsOwnRequestsWhetherItsIdsAreDenseOrSpread() async throws {
        let url = try await TestDatabase.fresh()
        let connection = try await PostgresConnection.connect(url)
        try await connection.insertReceiptJobs(4000)
        let store = QueueStore(client: PostgresClient(conninfo: url))
        // Every other job ready: a claim's span is twice its size (read as a range). Every tenth:
        // ten times (read by id).
        for every in [2, 10] {
            _ = try await connection.query("TRUNCATE iap.job_ready")
            _ = try await connection.query("""
                INSERT INTO iap.job_ready (id, state, run_at)
                SELECT id, state, run_at FROM iap.job_queue WHERE state = 'queued' AND id % $1::int = 0
                """, [every])
            let claimed = try await store.claim(limit: 100, workerID: "w-\(every)", leaseSeconds: 60)
            XCTAssertEqual(claimed.count, 100)
            XCTAssertTrue(claimed.allSatisfy { $0.id % every == 0 }, "only ready jobs, one in \(every)")
            let requests = try await connection.query("SELECT id, user_id, order_id FROM iap.job_requests WHERE id = ANY($1::bigint[])",
                                                      [claimed.map(\.id)])
            let expected = Dictionary(uniqueKeysWithValues: try requests.map {
                (try $0.decode(Int.self, at: 0), [try $0.decode(String?.self, at: 1), try $0.decode(String?.self, at: 2)])
            })
            for job in claimed {
                XCTAssertEqual([job.userID, job.orderID], expected[job.id], "job \(job.id), one in \(every)")
                XCTAssertEqual(job.payload, "cA==")
            }
        }
        await store.client.close()
        await connection.close()
    }
}

import Foundation
import Postgres
@testable import Queue
import TestSupport
import XCTest

/// The completion's cost follows its batch, whatever the statistics say. Analyzed while every
/// job was queued, PostgreSQL believes no job is leased; a completion that joined its batch
/// (`unnest(…)`) then rescanned the batch for every leased job: quadratic, seconds per batch.
final class CompletionPlanTests: XCTestCase {
    func testTheCompletionFindsItsJobsByPrimaryKeyWhateverTheStatistics() async throws {
        let url = try await TestDatabase.fresh()
        let connection = try await PostgresConnection.connect(url)
        _ = try await connection.query("""
            INSERT INTO iap.jobs (kind, user_id, order_id, payload, dedup_key)
            SELECT 'receipt', 'u-' || n, 'o-' || n, 'cA==', iap.job_dedup_key('receipt', 'u-' || n, 'o-' || n, 'cA==')
            FROM generate_series(1, 20000) AS n
            """)
        try await connection.execute(script: "ANALYZE iap.job_queue, iap.job_requests")
        _ = try await connection.query("""
            UPDATE iap.jobs SET state = 'running', attempts = 1, leased_by = 'w', lease_expires_at = now() + interval '1 hour'
            """)
        let ids = try await connection.query("SELECT id FROM iap.jobs ORDER BY id DESC LIMIT 1000").map { try $0.decode(Int.self, at: 0) }
        let rows = ids.map { CompletionRow(id: $0, state: "done", outcome: "credited", delaySeconds: nil, appleStatus: 0, error: nil,
                                           transactionIDs: ["t\($0)"]) }
        let store = QueueStore(client: PostgresClient(conninfo: url))
        let completion = try XCTUnwrap(store.completionStatement(rows, workerID: "w", witness: UUID()))
        let plan = try await connection.transaction { tx in
            try await tx.pipeline([completion.explained()])[0].map { try $0.decode(String.self, at: 0) }
        }.joined(separator: "\n")
        XCTAssertTrue(plan.contains("jobs_pkey"), plan)
        XCTAssertFalse(plan.contains("Nested Loop"), plan)
        XCTAssertFalse(plan.contains("Seq Scan on jobs"), plan)
        // And it writes what it should, each row its own values.
        let written = try await connection.transaction { tx in try await tx.pipeline([completion])[0] }
        XCTAssertEqual(written.count, 1000)
        let sample = try await connection.query("SELECT state, outcome, transaction_ids, leased_by FROM iap.jobs WHERE id = $1", [ids[17]])[0]
        XCTAssertEqual(try sample.decode(String.self, at: 0), "done")
        XCTAssertEqual(try sample.decode(String.self, at: 1), "credited")
        XCTAssertEqual(try sample.decode([String].self, at: 2), ["t\(ids[17])"])
        XCTAssertNil(try sample.decode(String?.self, at: 3))
        await store.client.close()
        await connection.close()
    }
}

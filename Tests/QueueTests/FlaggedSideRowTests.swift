import Postgres
import Queue
import TestSupport
import XCTest

/// A flagged job's side row (migrations 0029, 0032) follows the job: its state, and the Apple
/// transactions it was paid and not credited for, whoever changes them and however.
final class FlaggedSideRowTests: XCTestCase {
    func testTheOwedTransactionsFollowTheJobUntilItLeavesAttention() async throws {
        let fixture = try await QueueFixture.make()
        try await fixture.enqueue(1)
        let id = try await fixture.client.query("SELECT id FROM iap.job_queue")[0].decode(Int.self, at: 0)
        let side = {
            try await fixture.client.query("SELECT state, owed_transaction_ids FROM iap.job_flagged WHERE id = $1", [id])
                .map { "\(try $0.decode(String.self, at: 0)) \(try $0.decode([String]?.self, at: 1) ?? [])" }
        }
        _ = try await fixture.client.query("""
            UPDATE iap.job_queue SET state = 'attention', outcome = 'paid_not_credited', transaction_ids = '{t1}', finished_at = now()
            WHERE id = $1
            """, [id])
        let entered = try await side()
        XCTAssertEqual(entered, ["attention [\"t1\"]"])
        // Support adds a transaction Apple reported later, without touching the state.
        _ = try await fixture.client.query("UPDATE iap.job_queue SET transaction_ids = '{t1,t2}' WHERE id = $1", [id])
        let amended = try await side()
        XCTAssertEqual(amended, ["attention [\"t1\", \"t2\"]"])
        _ = try await fixture.client.query("UPDATE iap.job_queue SET outcome = 'invalid_receipt', state = 'failed' WHERE id = $1", [id])
        let failed = try await side()
        XCTAssertEqual(failed, ["failed []"], "owes nothing: not paid_not_credited")
        _ = try await fixture.client.query("UPDATE iap.jobs SET state = 'done', outcome = 'credited' WHERE id = $1", [id])
        let done = try await side()
        XCTAssertEqual(done, [], "a job left the flagged states by hand through the view: its side row went with it")
        await fixture.client.close()
    }
}

import Foundation
import Postgres
@testable import Queue
import XCTest

/// Witnesses go after their retention; a tombstone stays while a transaction that began before
/// it is still open, since it is what keeps that transaction from ever committing.
final class CommitWitnessRetentionTests: XCTestCase {
    func testATombstoneOutlivesTheTransactionsItFencesOff() async throws {
        let fixture = try await QueueFixture.make()
        // A transaction that began before the tombstone, still open (as an original COMMIT
        // blocked on the server would be).
        let older = try await PostgresConnection.connect(fixture.url)
        let blocked = Task {
            try await older.transaction { connection in
                _ = try await connection.query("SELECT 1")
                try await Task.sleep(for: .seconds(2))
            }
        }
        try await Task.sleep(for: .milliseconds(300))
        _ = try await fixture.client.query("""
            INSERT INTO iap.commit_witness (token, job_ids, lost_ids) VALUES
                (gen_random_uuid(), NULL, '{}'), (gen_random_uuid(), NULL, NULL)
            """)
        var deleted = try await fixture.store.deleteWitnesses(olderThan: 0)
        XCTAssertEqual(deleted, 1, "the committed batch's witness goes; the tombstone stays")
        try await blocked.value
        await older.close()
        deleted = try await fixture.store.deleteWitnesses(olderThan: 0)
        XCTAssertEqual(deleted, 1, "with no older transaction open, the tombstone goes too")
        _ = try await fixture.client.query("INSERT INTO iap.commit_witness (token, lost_ids) VALUES (gen_random_uuid(), '{}')")
        deleted = try await fixture.store.deleteWitnesses(olderThan: 3600)
        XCTAssertEqual(deleted, 0, "a witness within its retention stays")
        await fixture.client.close()
    }
}

import Foundation
import Postgres
import TestSupport
import XCTest

/// A transaction marked `.unflushed` commits without waiting for the flush, and only it: the
/// setting is the transaction's own, on a direct session and behind a transaction pooler alike.
final class CommitDurabilityTests: XCTestCase {
    func testOnlyAnUnflushedTransactionSkipsTheFlushDirectly() async throws {
        let connection = try await PostgresConnection.connect(try await flushingDatabase())
        try await assertOnlyTheUnflushedTransactionSkipsTheFlush(connection)
        await connection.close()
    }

    func testOnlyAnUnflushedTransactionSkipsTheFlushBehindAPooler() async throws {
        guard let bouncer = try await TestDatabase.pgBouncer(.transaction) else { throw XCTSkip("needs the private cluster") }
        let connection = try await PostgresConnection.connect(bouncer.url(replacingIn: try await flushingDatabase()))
        XCTAssertTrue(connection.isBehindPooler)
        try await assertOnlyTheUnflushedTransactionSkipsTheFlush(connection)
        await connection.close()
    }

    /// A fresh database whose sessions wait for the flush (the test cluster's default does not).
    private func flushingDatabase() async throws -> String {
        let url = try await TestDatabase.fresh(migrated: false)
        let setup = try await PostgresConnection.connect(url)
        try await setup.execute(script: "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET synchronous_commit = on', current_database()); END $$")
        await setup.close()
        return url
    }

    private func assertOnlyTheUnflushedTransactionSkipsTheFlush(_ connection: PostgresConnection) async throws {
        func setting(planning: TransactionPlanning, durability: CommitDurability) async throws -> String {
            try await connection.transaction(planning: planning, durability: durability) { tx in
                try await tx.commit(after: [PostgresStatement("SELECT current_setting('synchronous_commit')")])[0][0].decode(String.self, at: 0)
            }
        }
        let unflushed = try await setting(planning: .reused, durability: .unflushed)
        XCTAssertEqual(unflushed, "off")
        let unflushedPerRun = try await setting(planning: .perRun, durability: .unflushed)
        XCTAssertEqual(unflushedPerRun, "off")
        let flushed = try await setting(planning: .reused, durability: .flushed)
        XCTAssertEqual(flushed, "on", "the setting ended with the unflushed transactions")
        let outside = try await connection.query("SELECT current_setting('synchronous_commit')")[0].decode(String.self, at: 0)
        XCTAssertEqual(outside, "on")
    }
}

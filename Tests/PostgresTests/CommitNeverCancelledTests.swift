import Foundation
import Postgres
import TestSupport
import XCTest

/// A call that carries COMMIT is never cancelled past its deadline, only closed: a COMMIT
/// cancelled while it waits for a synchronous standby would stay committed on the primary
/// without being replicated. What happened is the commit witness's to say.
final class CommitNeverCancelledTests: XCTestCase {
    func testACommitPastItsDeadlineIsClosedNotCancelled() async throws {
        let url = try await TestDatabase.fresh()
        let admin = PostgresClient(conninfo: url, maxConnections: 1)
        _ = try await admin.query("CREATE TABLE slow_commit (id int PRIMARY KEY)")
        // A deferred trigger runs inside COMMIT: this COMMIT takes 1.5 s on the server, and a
        // cancel arriving meanwhile would roll it back.
        _ = try await admin.query("""
            CREATE FUNCTION slow_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(1.5); RETURN NULL; END $$
            """)
        _ = try await admin.query("""
            CREATE CONSTRAINT TRIGGER slow_at_commit AFTER INSERT ON slow_commit DEFERRABLE INITIALLY DEFERRED
            FOR EACH ROW EXECUTE FUNCTION slow_at_commit()
            """)
        var configuration = PostgresConfiguration(conninfo: url, applicationName: "commit-deadline-test")
        configuration.callTimeout = 0.5
        let client = PostgresClient(configuration: configuration, maxConnections: 1)
        do {
            try await client.transaction { _ = try await $0.query("INSERT INTO slow_commit VALUES (1)") }
            XCTFail("a COMMIT of 1.5 s answered within a 0.5 s deadline")
        } catch let error as PostgresError {
            XCTAssertTrue(error.isTimeout, "\(error)")
        }
        let committed = try await TestSupport.eventually(10) {
            try await admin.query("SELECT count(*) FROM slow_commit")[0].decode(Int.self, at: 0) == 1
        }
        XCTAssertTrue(committed, "the COMMIT was cancelled")
        // A statement that is not a COMMIT is still cancelled at its deadline.
        do {
            _ = try await client.query("SELECT pg_sleep(30), 'never'")
            XCTFail("a 30 s statement answered within a 0.5 s deadline")
        } catch let error as PostgresError {
            XCTAssertTrue(error.isTimeout, "\(error)")
        }
        let cancelled = try await TestSupport.eventually(10) {
            try await admin.query("SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(30), %'")[0].decode(Int.self, at: 0) == 0
        }
        XCTAssertTrue(cancelled, "the statement was left running")
        await client.close()
        await admin.close()
    }
}

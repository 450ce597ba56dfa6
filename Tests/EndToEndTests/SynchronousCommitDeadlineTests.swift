import EmbeddedPostgres
import Foundation
import Postgres
import TestSupport
import XCTest

/// A COMMIT waiting for a synchronous standby is past its deadline: the connection is closed,
/// never the COMMIT cancelled. A cancelled wait would leave the transaction committed and
/// visible on the primary without being replicated, so a promoted standby would not have it.
final class SynchronousCommitDeadlineTests: XCTestCase {
    func testACommitWaitingForTheStandbyIsNeverCancelled() async throws {
        let set = try await PrivateReplicaSet.start(PrivateReplicaSet.Options(synchronous: true))
        defer { set.stop() }
        try await set.createDatabase("drill")
        let primaryURL = set.directURL(slot: set.primary, database: "drill")
        let reader = try await PostgresConnection.connect(primaryURL)
        _ = try await reader.query("CREATE TABLE t (n int)")

        set.freezeReplication() // the standby acknowledges nothing: every COMMIT waits
        var configuration = PostgresConfiguration(conninfo: primaryURL, applicationName: "sync-commit-test")
        configuration.callTimeout = 1
        let writer = PostgresClient(configuration: configuration, maxConnections: 1)
        do {
            try await writer.transaction { _ = try await $0.query("INSERT INTO t VALUES (1)") }
            XCTFail("a COMMIT answered while the synchronous standby was frozen")
        } catch let error as PostgresError {
            XCTAssertTrue(error.isTimeout, "\(error)")
        }
        try await Task.sleep(for: .milliseconds(500)) // a cancel request, had one been sent, has landed
        let visibleUnreplicated = try await reader.query("SELECT count(*) FROM t")[0].decode(Int.self, at: 0)
        XCTAssertEqual(visibleUnreplicated, 0, "the COMMIT was cancelled: committed on the primary, not on the standby")

        set.thawReplication()
        let committed = try await TestSupport.eventually(20) {
            try await reader.query("SELECT count(*) FROM t")[0].decode(Int.self, at: 0) == 1
        }
        XCTAssertTrue(committed, "the COMMIT completes once the standby acknowledges it")
        await writer.close()
        await reader.close()
    }
}

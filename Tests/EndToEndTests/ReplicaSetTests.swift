import EmbeddedPostgres
import Foundation
import Postgres
import TestSupport
import XCTest

/// The failover drills' harness itself: a standby that follows, a failover the multi-host URL
/// follows, and a rebuilt standby that follows the new primary.
final class ReplicaSetTests: XCTestCase {
    func testStandbyFollowsAndTheMultiHostURLFindsTheNewPrimaryAfterAFailover() async throws {
        let set = try await PrivateReplicaSet.start()
        defer { set.stop() }
        try await set.createDatabase("drill")
        let writer = try await PostgresConnection.connect(set.url(database: "drill"))
        _ = try await writer.query("CREATE TABLE t (n int)")
        _ = try await writer.query("INSERT INTO t VALUES (1)")
        await writer.close()
        let standbyB = try await PostgresConnection.connect(set.directURL(slot: .b, database: "drill"))
        let replicated = try await eventually(10) { try await standbyB.query("SELECT count(*) FROM t")[0].decode(Int.self, at: 0) == 1 }
        XCTAssertTrue(replicated, "a write on the primary is readable on the standby")
        let standbySettings = try await standbyB.query("SELECT pg_is_in_recovery(), current_setting('synchronous_standby_names')")[0]
        XCTAssertEqual(try standbySettings.decode(Bool.self, at: 0), true)
        XCTAssertEqual(try standbySettings.decode(String.self, at: 1), "", "a standby never inherits synchronous mode")
        await standbyB.close()

        set.hangPrimary()
        var hungA = PostgresConfiguration(conninfo: set.directURL(slot: .a, database: "drill"))
        hungA.connectTimeout = 1
        do {
            _ = try await PostgresConnection.connect(hungA)
            XCTFail("a hung primary answers nothing")
        } catch {}
        try await set.promoteStandby()
        try await set.fenceOldPrimary()
        XCTAssertEqual(set.primary, .b)
        let promoted = try await PostgresConnection.connect(set.directURL(slot: .b, database: "drill"))
        _ = try await promoted.query("INSERT INTO t VALUES (2)")
        await promoted.close()

        try await set.rebuildStandby()
        XCTAssertEqual(set.standby, .a)
        let afterFailover = try await PostgresConnection.connect(set.url(database: "drill"))
        let port = try await afterFailover.query("SELECT inet_server_port()")[0].decode(Int.self, at: 0)
        XCTAssertEqual(port, set.port(.b), "the multi-host URL reaches the promoted standby")
        await afterFailover.close()
        let standbyA = try await PostgresConnection.connect(set.directURL(slot: .a, database: "drill"))
        let caughtUp = try await eventually(10) { try await standbyA.query("SELECT count(*) FROM t")[0].decode(Int.self, at: 0) == 2 }
        XCTAssertTrue(caughtUp, "the rebuilt standby follows the new primary")
        await standbyA.close()
        let primaryB = try await PostgresConnection.connect(set.directURL(slot: .b, database: "drill"))
        let mode = try await primaryB.query("SELECT current_setting('synchronous_standby_names')")[0].decode(String.self, at: 0)
        XCTAssertEqual(mode, "*", "synchronous again once the new standby streams")
        await primaryB.close()
    }

    func testAsynchronousStandbyMissesWhatWasCommittedWhileReplicationWasFrozen() async throws {
        let set = try await PrivateReplicaSet.start(.init(synchronous: false))
        defer { set.stop() }
        try await set.createDatabase("drill")
        let writer = try await PostgresConnection.connect(set.url(database: "drill"))
        _ = try await writer.query("CREATE TABLE t (n int)")
        let standby = try await PostgresConnection.connect(set.directURL(slot: .b, database: "drill"))
        let hasTable = try await eventually(10) { try await standby.query("SELECT to_regclass('t') IS NOT NULL")[0].decode(Bool.self, at: 0) }
        XCTAssertTrue(hasTable)
        await standby.close()
        set.freezeReplication()
        _ = try await writer.query("INSERT INTO t VALUES (1)")
        await writer.close()
        set.crashPrimary()
        try await set.promoteStandby()
        let promoted = try await PostgresConnection.connect(set.url(database: "drill"))
        let rows = try await promoted.query("SELECT count(*) FROM t")[0].decode(Int.self, at: 0)
        XCTAssertEqual(rows, 0, "the commit made while replication was frozen is lost with the old primary")
        await promoted.close()
    }
}

extension ReplicaSetTests {
    func testSynchronousCommitsResumeSoonAfterThePrimaryRestarts() async throws {
        let set = try await PrivateReplicaSet.start()
        defer { set.stop() }
        try await set.createDatabase("drill")
        var configuration = PostgresConfiguration(conninfo: set.directURL(slot: .a, database: "drill"))
        configuration.callTimeout = 5
        let writer = PostgresClient(configuration: configuration, maxConnections: 1)
        _ = try await writer.query("CREATE TABLE t (n int)")
        try await set.restartPrimary()
        let started = ContinuousClock.now
        let committed = try await eventually(20, every: .milliseconds(200)) { (try? await writer.query("INSERT INTO t VALUES (1)")) != nil }
        XCTAssertTrue(committed, "the standby reconnected, so synchronous commits go through again")
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(5))
        await writer.close()
    }
}

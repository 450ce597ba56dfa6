import Foundation
import Postgres
import Synchronization
import TestSupport
import XCTest

/// The database layer's smaller promises: what the server says reaches a handler (never raw stderr), a
/// COPY sent as a query cannot spin, a COMMIT answered ROLLBACK is an error, and a pool that
/// was closed keeps nothing open.
final class ServerWordsTests: XCTestCase {
    func testNoticesAndWarningsReachTheHandler() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        let heard = Mutex<[PostgresNotice]>([])
        var configuration = PostgresConfiguration(conninfo: url, applicationName: "notice-test")
        configuration.noticeHandler = { notice in heard.withLock { $0.append(notice) } }
        let connection = try await PostgresConnection.connect(configuration)
        try await connection.execute(script: "DO $$ BEGIN RAISE WARNING 'disk nearly full'; RAISE NOTICE 'just saying'; END $$")
        let notices = heard.withLock { $0 }
        XCTAssertEqual(notices.map(\.severity), ["WARNING", "NOTICE"])
        XCTAssertEqual(notices.first?.message, "disk nearly full")
        XCTAssertEqual(notices.first?.isWarningOrWorse, true)
        XCTAssertEqual(notices.last?.isWarningOrWorse, false)
        await connection.close()
    }

    /// Terminated in the middle of a call, a session's FATAL is that call's error and also
    /// reaches the handler (idle, libpq hands it to the handler by itself): a caller that
    /// retries in silence, such as the listener's health check, still leaves the server's words.
    func testAFatalDuringACallReachesTheHandlerToo() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        let heard = Mutex<[PostgresNotice]>([])
        var configuration = PostgresConfiguration(conninfo: url, applicationName: "fatal-test")
        configuration.noticeHandler = { notice in heard.withLock { $0.append(notice) } }
        let connection = try await PostgresConnection.connect(configuration)
        let admin = try await PostgresConnection.connect(url)
        let pid = try await connection.query("SELECT pg_backend_pid()")[0].decode(Int.self, at: 0)
        let sleeper = Task { try await connection.query("SELECT pg_sleep(30)") }
        let sleeping = try await eventually(10) {
            try await admin.query("SELECT count(*) FROM pg_stat_activity WHERE pid = $1 AND query LIKE 'SELECT pg_sleep%'", [pid])[0]
                .decode(Int.self, at: 0) == 1
        }
        XCTAssertTrue(sleeping)
        _ = try await admin.query("SELECT pg_terminate_backend($1)", [pid])
        do {
            _ = try await sleeper.value
            XCTFail("a terminated call succeeded")
        } catch is PostgresError {}
        let fatal = heard.withLock { $0 }.filter { $0.severity == "FATAL" }
        XCTAssertEqual(fatal.count, 1, "\(heard.withLock { $0 })")
        XCTAssertEqual(fatal.first?.sqlState, "57P01")
        XCTAssertTrue(fatal.first?.message.contains("terminating connection") == true, "\(fatal)")
        await connection.close()
        await admin.close()
    }

    func testACopySentAsAQueryEndsWithAnErrorAndTheSessionStaysUsable() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        let connection = try await PostgresConnection.connect(url)
        _ = try await connection.query("CREATE TABLE copied (n int)")
        for sql in ["COPY copied FROM STDIN", "COPY (SELECT generate_series(1, 1000)) TO STDOUT"] {
            do {
                _ = try await connection.query(sql)
                XCTFail("\(sql) answered as a query")
            } catch let error as PostgresError {
                XCTAssertTrue(error.message.contains("COPY"), error.message)
            }
            let rows = try await connection.query("SELECT count(*) FROM copied")[0].decode(Int.self, at: 0)
            XCTAssertEqual(rows, 0)
        }
        do {
            try await connection.execute(script: "COPY copied FROM STDIN")
            XCTFail("COPY ran as a script")
        } catch is PostgresError {}
        XCTAssertTrue(connection.isReusable)
        await connection.close()
    }

    func testACommitAnsweredRollbackIsAnError() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        let connection = try await PostgresConnection.connect(url)
        _ = try await connection.query("CREATE TABLE kept (n int)")
        do {
            try await connection.transaction { connection in
                _ = try await connection.query("INSERT INTO kept VALUES (1)")
                _ = try? await connection.query("SELECT 1/0") // swallowed: the transaction is aborted anyway
            }
            XCTFail("an aborted transaction reported success")
        } catch let error as PostgresError {
            XCTAssertTrue(error.message.contains("ROLLBACK"), error.message)
        }
        let kept = try await connection.query("SELECT count(*) FROM kept")[0].decode(Int.self, at: 0)
        XCTAssertEqual(kept, 0)
        await connection.close()
    }

    func testAConnectionGivenBackAfterThePoolClosedIsClosed() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        let client = PostgresClient(conninfo: url, maxConnections: 2)
        let admin = try await PostgresConnection.connect(url)
        let name = "closing-pool-\(UUID().uuidString.prefix(8))"
        let countSQL = "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1"
        var configuration = PostgresConfiguration(conninfo: url, applicationName: name)
        configuration.callTimeout = 10
        let named = PostgresClient(configuration: configuration, maxConnections: 2)
        try await named.withConnection { connection in
            _ = try await connection.query("SELECT 1")
            await named.close() // closes idle ones; this one is still checked out
        }
        let closed = try await eventually(5) { try await admin.query(countSQL, [name])[0].decode(Int.self, at: 0) == 0 }
        XCTAssertTrue(closed, "the connection checked out during close() was closed when it came back")
        XCTAssertEqual(named.connectionCounts.idle + named.connectionCounts.busy, 0)
        await admin.close()
        await client.close()
    }
}

import EmbeddedPostgres
import Foundation
import Postgres
import TestSupport
import XCTest

/// Every call has a deadline; a connection whose peer went silent costs one
/// deadline, is abandoned and never reused; the server drops a session idle in a transaction.
final class DeadlineTests: XCTestCase {
    func testFrozenConnectionTimesOutAndIsNeverReused() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        let proxy = try FaultProxy(targetPort: try XCTUnwrap(URLComponents(string: url)?.port))
        defer { proxy.stop() }
        let observer = CallRecorder()
        var configuration = PostgresConfiguration(conninfo: proxy.url(replacingIn: url), applicationName: "deadline-test")
        configuration.callTimeout = 0.5
        configuration.observer = observer
        let client = PostgresClient(configuration: configuration, maxConnections: 1)
        let before = try await client.query("SELECT pg_backend_pid()")[0].decode(Int.self, at: 0)
        proxy.freezeOpenConnections()
        let started = Date()
        do {
            _ = try await client.withConnection { try await $0.query("SELECT 1") }
            XCTFail("a frozen connection answered")
        } catch let error as PostgresError {
            XCTAssertTrue(error.isTimeout, "\(error)")
            XCTAssertTrue(error.isConnectionLost, "callers handle a timeout like a lost connection")
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 10, "the call ended at its deadline, not never")
        // The pool dropped the abandoned session: the next call opens a new one through the proxy.
        let after = try await client.query("SELECT pg_backend_pid()")[0].decode(Int.self, at: 0)
        XCTAssertNotEqual(before, after)
        XCTAssertEqual(client.connectionCounts.idle + client.connectionCounts.busy, 1)
        XCTAssertEqual(observer.counts[.timeout], 1)
        XCTAssertGreaterThanOrEqual(observer.counts[.ok] ?? 0, 2)
        await client.close()
    }

    func testOneDeadConnectionRetiresTheIdleOnesToTheSameServer() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        let proxy = try FaultProxy(targetPort: try XCTUnwrap(URLComponents(string: url)?.port))
        defer { proxy.stop() }
        var configuration = PostgresConfiguration(conninfo: proxy.url(replacingIn: url), applicationName: "deadline-test")
        configuration.callTimeout = 0.5
        let client = PostgresClient(configuration: configuration, maxConnections: 3)
        // Three sessions open and idle, then the server goes silent on all of them.
        async let a: Void = client.withConnection { _ = try await $0.query("SELECT pg_sleep(0.1)") }
        async let b: Void = client.withConnection { _ = try await $0.query("SELECT pg_sleep(0.1)") }
        async let c: Void = client.withConnection { _ = try await $0.query("SELECT pg_sleep(0.1)") }
        _ = try await (a, b, c)
        XCTAssertEqual(client.connectionCounts.idle, 3)
        proxy.freezeOpenConnections()
        do {
            _ = try await client.withConnection { try await $0.query("SELECT 1") }
            XCTFail("a frozen connection answered")
        } catch let error as PostgresError {
            XCTAssertTrue(error.isTimeout, "\(error)")
        }
        // The next calls get new sessions, not one more deadline per stale idle session (each
        // would have thrown a timeout).
        for _ in 0..<3 { _ = try await client.withConnection { try await $0.query("SELECT 1") } }
        XCTAssertEqual(client.brokenConnectionCount, 1)
        await client.close()
    }

    func testTheUsersConninfoWinsOverOurDefaults() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        let mine = try await PostgresConnection.connect(PostgresConfiguration(conninfo: url, applicationName: "ours"))
        let ours = try await mine.query("SELECT current_setting('application_name'), current_setting('idle_in_transaction_session_timeout'), "
                                        + "current_setting('jit')")[0]
        XCTAssertEqual(try ours.decode(String.self, at: 0), "ours")
        XCTAssertEqual(try ours.decode(String.self, at: 1), "10s", "direct sessions carry the idle-in-transaction limit")
        XCTAssertEqual(try ours.decode(String.self, at: 2), "off", "no statement of ours is worth compiling")
        await mine.close()
        let theirs = try await PostgresConnection.connect(PostgresConfiguration(conninfo: url + "&application_name=theirs&keepalives_idle=42",
                                                                                applicationName: "ours"))
        let name = try await theirs.query("SELECT current_setting('application_name')")[0].decode(String.self, at: 0)
        XCTAssertEqual(name, "theirs")
        await theirs.close()
    }

    func testConnectToASilentServerTimesOut() async throws {
        // A socket that listens but never speaks: TCP connects, the startup never completes.
        let silent = try SilentListener()
        var configuration = PostgresConfiguration(conninfo: "postgresql://postgres@127.0.0.1:\(silent.port)/postgres?sslmode=disable",
                                                  applicationName: "deadline-test")
        configuration.connectTimeout = 0.5
        do {
            _ = try await PostgresConnection.connect(configuration)
            XCTFail("connected to a silent server")
        } catch let error as PostgresError {
            XCTAssertTrue(error.isTimeout, "\(error)")
        }
        silent.close()
    }

    func testSessionFrozenInsideATransactionLosesItsLocks() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        let direct = PostgresClient(conninfo: url, maxConnections: 2)
        _ = try await direct.query("CREATE TABLE t (id int PRIMARY KEY, v int)")
        _ = try await direct.query("INSERT INTO t VALUES (1, 0)")
        let proxy = try FaultProxy(targetPort: try XCTUnwrap(URLComponents(string: url)?.port))
        defer { proxy.stop() }
        var configuration = PostgresConfiguration(conninfo: proxy.url(replacingIn: url), applicationName: "frozen-in-tx")
        configuration.idleInTransactionTimeout = 1
        configuration.callTimeout = 30
        let frozen = try await PostgresConnection.connect(configuration)
        let locked = Task {
            try await frozen.transaction { tx in
                _ = try await tx.query("SELECT v FROM t WHERE id = 1 FOR UPDATE")
                proxy.freezeOpenConnections()
                _ = try await tx.query("UPDATE t SET v = 1 WHERE id = 1") // never reaches the server
            }
        }
        // Another session waits for the row lock; the server ends the silent session after 1 s.
        try await Task.sleep(for: .milliseconds(300))
        let waited = try await direct.transaction { tx -> Int in
            _ = try await tx.query("SET LOCAL lock_timeout = '20s'")
            return try await tx.query("UPDATE t SET v = 2 WHERE id = 1 RETURNING v")[0].decode(Int.self, at: 0)
        }
        XCTAssertEqual(waited, 2, "the lock was released by idle_in_transaction_session_timeout")
        proxy.resetConnections()
        _ = try? await locked.value
        await frozen.close()
        await direct.close()
    }
}

/// Counts database call results by kind.
final class CallRecorder: PostgresCallObserver, @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [PostgresCallResult: Int] = [:]
    func databaseCallFinished(_ result: PostgresCallResult) { lock.withLock { storage[result, default: 0] += 1 } }
    var counts: [PostgresCallResult: Int] { lock.withLock { storage } }
}

/// A TCP listener that accepts into its backlog and never reads or writes.
final class SilentListener: @unchecked Sendable {
    let port: Int
    private let fd: Int32

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && listen(fd, 16) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard ok else { throw POSIXError(.EADDRINUSE) }
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    func close() { Glibc.close(fd) }
}

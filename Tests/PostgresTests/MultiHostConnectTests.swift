import EmbeddedPostgres
import Foundation
@testable import Postgres
import TestSupport
import XCTest

/// The connect deadline is per host. A first host that accepts TCP and never answers
/// (a hung primary) costs one deadline; the next host of the list is then tried.
final class MultiHostConnectTests: XCTestCase {
    func testAHungFirstHostCostsOneDeadlineThenTheNextHostServes() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        let components = try XCTUnwrap(URLComponents(string: url))
        let silent = try SilentListener()
        defer { silent.close() }
        let database = components.path
        let multiHost = "postgresql://postgres@127.0.0.1:\(silent.port),127.0.0.1:\(try XCTUnwrap(components.port))\(database)"
            + "?sslmode=disable&target_session_attrs=read-write"
        var configuration = PostgresConfiguration(conninfo: multiHost, applicationName: "multi-host-test")
        configuration.connectTimeout = 1
        let started = Date()
        let connection = try await PostgresConnection.connect(configuration)
        let elapsed = Date().timeIntervalSince(started)
        let one = try await connection.query("SELECT 1")[0].decode(Int.self, at: 0)
        XCTAssertEqual(one, 1)
        XCTAssertGreaterThanOrEqual(elapsed, 0.9, "the hung host had its own deadline")
        XCTAssertLessThan(elapsed, 8, "and only its own: the healthy host was reached after it")
        await connection.close()
    }

    func testEveryHostFailingNamesEachHost() async throws {
        let silent = try SilentListener()
        defer { silent.close() }
        let closedPort = try PrivateCluster.freePort()
        var configuration = PostgresConfiguration(
            conninfo: "postgresql://postgres@127.0.0.1:\(silent.port),127.0.0.1:\(closedPort)/postgres?sslmode=disable",
            applicationName: "multi-host-test")
        configuration.connectTimeout = 0.5
        do {
            _ = try await PostgresConnection.connect(configuration)
            XCTFail("nothing can serve")
        } catch let error as PostgresError {
            XCTAssertEqual(error.kind, .connectionFailed, "\(error)")
            XCTAssertTrue(error.message.contains("127.0.0.1:\(silent.port)"), error.message)
            XCTAssertTrue(error.message.contains("127.0.0.1:\(closedPort)"), error.message)
            XCTAssertTrue(error.message.contains("timed out"), error.message)
        }
    }

    func testAHostNameIsResolvedByUsUnderTheDeadline() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        let named = url.replacingOccurrences(of: "127.0.0.1", with: "localhost")
        let connection = try await PostgresConnection.connect(PostgresConfiguration(conninfo: named, applicationName: "lookup-test"))
        let one = try await connection.query("SELECT 1")[0].decode(Int.self, at: 0)
        XCTAssertEqual(one, 1)
        await connection.close()
        do {
            _ = try HostLookup.shared.addresses(of: "no-such-host.invalid", until: Deadline(secondsFromNow: 5))
            XCTFail("an unknown name resolved")
        } catch let error as PostgresError {
            XCTAssertTrue(error.message.contains("no-such-host.invalid"), error.message)
        }
    }

    func testHostListsFollowLibpqsRules() {
        XCTAssertEqual(ConnectTargets(conninfo: "postgresql://u@a:1,b:2/db?target_session_attrs=read-write").hosts,
                       [.init(host: "a", hostaddr: "", port: "1"), .init(host: "b", hostaddr: "", port: "2")])
        XCTAssertEqual(ConnectTargets(conninfo: "host=a,b port=5433").hosts,
                       [.init(host: "a", hostaddr: "", port: "5433"), .init(host: "b", hostaddr: "", port: "5433")])
        XCTAssertEqual(ConnectTargets(conninfo: "host=a,b hostaddr=10.0.0.1,10.0.0.2").hosts,
                       [.init(host: "a", hostaddr: "10.0.0.1", port: ""), .init(host: "b", hostaddr: "10.0.0.2", port: "")])
        XCTAssertEqual(ConnectTargets(conninfo: "dbname=x").hosts, [.init(host: "", hostaddr: "", port: "")])
        let socket = ConnectTargets(conninfo: "host=/var/run/postgresql").hosts[0]
        XCTAssertFalse(socket.needsLookup)
        XCTAssertFalse(ConnectTargets.Host(host: "127.0.0.1", hostaddr: "", port: "").needsLookup)
        XCTAssertFalse(ConnectTargets.Host(host: "::1", hostaddr: "", port: "").needsLookup)
        XCTAssertTrue(ConnectTargets.Host(host: "db.example", hostaddr: "", port: "").needsLookup)
        XCTAssertEqual(ConnectTargets.Host(host: "db", hostaddr: "", port: "5").overrides(address: "10.1.1.1").map { "\($0.0)=\($0.1)" },
                       ["host=db", "hostaddr=10.1.1.1", "port=5"])
    }
}

import EmbeddedPostgres
import Foundation
import Postgres
import TestSupport
import XCTest

/// A call past its deadline asks the server to cancel what it runs. A cancel sent to a hung
/// host never returns (PostgreSQL 15's libpq has no timeout for it): it must not hold back the
/// cancels meant for a healthy server, such as the new primary after a failover.
final class CancelRequestTests: XCTestCase {
    func testACancelStuckOnAHungHostDoesNotHoldBackTheNextOne() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        let observer = PostgresClient(conninfo: url, maxConnections: 1)
        let proxy = try FaultProxy(targetPort: try XCTUnwrap(URLComponents(string: url)?.port))
        defer { proxy.stop() }

        // A session to the "hung" host: its call times out and its cancel hangs.
        var hungConfiguration = PostgresConfiguration(conninfo: proxy.url(replacingIn: url), applicationName: "cancel-hung")
        hungConfiguration.callTimeout = 0.5
        let hung = try await PostgresConnection.connect(hungConfiguration)
        let hungCall = Task { try await hung.query("SELECT pg_sleep(3)") }
        try await Task.sleep(for: .milliseconds(200))
        proxy.hang()
        _ = try? await hungCall.value
        try await Task.sleep(for: .milliseconds(200)) // its cancel is now stuck on the hung host

        // A session to a healthy server: its cancel must reach it at once.
        var healthyConfiguration = PostgresConfiguration(conninfo: url, applicationName: "cancel-healthy")
        healthyConfiguration.callTimeout = 0.5
        let healthy = try await PostgresConnection.connect(healthyConfiguration)
        do {
            _ = try await healthy.query("SELECT pg_sleep(60)")
            XCTFail("pg_sleep(60) answered within its deadline")
        } catch let error as PostgresError {
            XCTAssertTrue(error.isTimeout, "\(error)")
        }
        // Without the cancel the backend would sleep on for a minute (a closed socket goes
        // unnoticed by a sleeping backend).
        var stillSleeping = true
        for _ in 0..<50 where stillSleeping {
            stillSleeping = try await observer.query("""
                SELECT count(*) FROM pg_stat_activity WHERE application_name = 'cancel-healthy' AND query LIKE '%pg_sleep(60)%' AND state = 'active'
                """)[0].decode(Int.self, at: 0) > 0
            if stillSleeping { try await Task.sleep(for: .milliseconds(100)) }
        }
        XCTAssertFalse(stillSleeping, "the healthy server's statement was cancelled, not left running behind a hung cancel")
        await healthy.close()
        await hung.close()
        await observer.close()
    }
}

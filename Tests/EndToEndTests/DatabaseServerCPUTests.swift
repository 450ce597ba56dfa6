import Foundation
import Postgres
import TestSupport
@testable import Workloads
import XCTest

/// The benchmarks' reading of the database server's CPU (`bench queue database_cpu`, `bench apple`):
/// found from a backend's parent, and still counting a session's work after it has closed.
final class DatabaseServerCPUTests: XCTestCase {
    func testTheServerIsFoundAndAClosedSessionsWorkStillCounts() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        let client = PostgresClient(conninfo: url, maxConnections: 1, applicationName: "cpu-test")
        let located = await DatabaseServerCPU.locate(client)
        await client.close()
        // A TEST_DATABASE_URL on another machine has no local postmaster: nothing to check then.
        guard let server = located else {
            try XCTSkipIf(ProcessInfo.processInfo.environment["TEST_DATABASE_URL"] != nil, "the server is not on this machine")
            return XCTFail("the private cluster's postmaster was not found")
        }
        let before = server.seconds()
        // A session burns CPU and ends; its backend exits and is reaped by the postmaster.
        let burner = PostgresClient(conninfo: url, maxConnections: 1, applicationName: "cpu-burner")
        _ = try await burner.query("SELECT count(*) FROM generate_series(1, 3000000) AS n WHERE n % 7 = 3")
        await burner.close()
        try await Task.sleep(for: .milliseconds(300))
        XCTAssertGreaterThan(server.seconds() - before, 0.05, "the closed session's CPU is counted (the postmaster's reaped children)")
    }

    func testAProcessThatIsGoneReadsAsNothing() {
        XCTAssertNil(ProcessStat.fields(pid_t(Int32.max)))
        XCTAssertEqual(ResourceUsage.cpuSeconds(pid: pid_t(Int32.max)), 0)
    }
}

import Foundation
import Postgres
@testable import SupportConsole
import TestSupport
import XCTest

/// The overview's throughput charts read the log of finished jobs (migration 0028), not the jobs.
final class ConsoleThroughputTests: XCTestCase {
    func testWindowsSumTheLogInsideTheirWidthOnly() async throws {
        let url = try await TestDatabase.fresh()
        let client = PostgresClient(conninfo: url, maxConnections: 1)
        _ = try await client.query("""
            INSERT INTO iap.job_finishes (finished_at, state, outcome, jobs, retried) VALUES
                (now() - interval '5 minutes', 'done', 'credited', 7, 2),
                (now() - interval '4 minutes', 'done', 'credited', 3, 0),
                (now() - interval '2 hours', 'failed', 'invalid_receipt', 4, 1),
                (now() - interval '3 days', 'done', 'credited', 100, 0)
            """)
        let store = ThroughputStore(client: client)
        let hour = try await store.lastHour()
        XCTAssertEqual(hour.finished, 10)
        XCTAssertEqual(hour.retried, 2)
        XCTAssertEqual(hour.byOutcome.map(\.outcome), ["credited"])
        let day = try await store.lastDay()
        XCTAssertEqual(day.finished, 14, "the row three days old is outside the day")
        XCTAssertEqual(day.byOutcome.map(\.count), [10, 4])
        XCTAssertEqual(day.series(now: Date()).reduce(0, +), 14)
        await client.close()
    }
}

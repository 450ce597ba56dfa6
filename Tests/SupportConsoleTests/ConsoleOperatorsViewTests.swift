import Foundation
import HTTP
import XCTest

/// The operators' view: state tiles and alert kinds open filtered lists; charts carry a time axis.
final class ConsoleOperatorsViewTests: XCTestCase {
    func testOverviewTilesAndAlertKindsOpenFilteredListsAndChartsHaveATimeAxis() async throws {
        let harness = try await ConsoleHarness()
        _ = try await harness.client.query("""
            INSERT INTO iap.alerts (kind, job_id, user_id, reason, details) VALUES ('stuck_verification', $1, 'bob', 'unfinished_retrying', '{}')
            """, [harness.fixture.creditedJob])
        let session = try ConsoleSession(baseURL: harness.baseURL)
        _ = try await session.signIn("vera", password: ConsoleHarness.password)
        let overview = try await session.get("/").text
        XCTAssertTrue(overview.contains("<a href=\"/jobs?state=attention\">"), "a state tile opens the jobs in that state")
        XCTAssertTrue(overview.contains("<a href=\"/alerts?kind=stuck_verification\">"), "an alert kind opens only that kind")
        XCTAssertEqual(overview.components(separatedBy: "<div class=\"axis-labels\"").count - 1, 2, "both throughput charts have a time axis")
        XCTAssertTrue(overview.contains("(UTC; highest"))
        let attention = try await session.get("/jobs?state=attention").text
        XCTAssertTrue(attention.contains("href=\"/jobs/\(harness.fixture.attentionJob)\"") && !attention.contains("href=\"/jobs/\(harness.fixture.creditedJob)\""))
        let stuck = try await session.get("/alerts?kind=stuck_verification").text
        XCTAssertTrue(stuck.contains("unfinished_retrying"))
        XCTAssertFalse(stuck.contains("no_matching_order"), "paid_not_credited alerts are not listed under stuck_verification")
        XCTAssertTrue(stuck.contains("Show every kind"))
        let unknown = try await session.get("/alerts?kind=bogus")
        XCTAssertEqual(unknown.status, 400)
        await session.close()
        await harness.close()
    }
}

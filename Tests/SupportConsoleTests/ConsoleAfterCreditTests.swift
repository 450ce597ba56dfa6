import Foundation
import HTTP
import SupportConsole
import XCTest

/// After a credit the job must not look broken: once the ledger holds the payment, the
/// paid_not_credited job reads as credited and its resolved alert's kind is no longer red.
final class ConsoleAfterCreditTests: XCTestCase {
    func testACreditedAttentionJobNoLongerShowsRed() async throws {
        let harness = try await ConsoleHarness()
        let session = try ConsoleSession(baseURL: harness.baseURL)
        _ = try await session.signIn("sam", password: ConsoleHarness.password)
        let job = harness.fixture.attentionJob
        let before = try await session.get("/jobs?q=alice")
        XCTAssertTrue(before.text.contains("<span class=\"badge bad\" title=\"Apple says the buyer paid"))
        let credit = try await session.post("/alerts/\(harness.fixture.paidNotCreditedAlert)/credit",
                                            [("csrf", try await session.csrfToken()), ("order_id", "order-alice-1")])
        XCTAssertEqual(credit.status, 303)
        for path in ["/jobs?q=alice", "/users?id=alice", "/jobs/\(job)"] {
            let page = try await session.get(path)
            XCTAssertFalse(page.text.contains("<span class=\"badge bad\" title=\"Apple says the buyer paid"), path)
            XCTAssertFalse(page.text.contains("<span class=\"badge bad\" title=\"Finished, but a person must act"), path)
            XCTAssertTrue(page.text.contains(">credited since</span>"), path)
        }
        let overview = try await session.get("/").text
        XCTAssertTrue(overview.contains("2 still open: 1 credited since"), "the overview's attention count says how many are settled")
        let jobPage = try await session.get("/jobs/\(job)")
        XCTAssertTrue(jobPage.text.contains("nothing is owed"))
        XCTAssertFalse(jobPage.text.contains("next run"), "a finished job has no next run")
        let alerts = try await session.get("/alerts")
        XCTAssertTrue(alerts.text.contains("<span class=\"badge neutral\" title=\"Apple says the buyer paid; no order could take the payment. Find"), "a resolved alert's kind is history")
        // Carl's job is still owed: still red.
        let carl = try await session.get("/jobs?q=carl")
        XCTAssertTrue(carl.text.contains("<span class=\"badge bad\" title=\"Apple says the buyer paid"))
        await session.close()
        await harness.close()
    }

    /// A job with no outcome yet (queued, running) is listed like any other, not a database error.
    func testJobsWithoutAnOutcomeAreListed() async throws {
        let harness = try await ConsoleHarness()
        _ = try await harness.client.query("SELECT iap.enqueue_receipt('queued-buyer', 'order-q-1', 'cmVjZWlwdA==')")
        let session = try ConsoleSession(baseURL: harness.baseURL)
        _ = try await session.signIn("sam", password: ConsoleHarness.password)
        for path in ["/jobs", "/jobs?q=queued-buyer", "/users?id=queued-buyer"] {
            let page = try await session.get(path)
            XCTAssertEqual(page.status, 200, path)
            XCTAssertTrue(page.text.contains("queued"), path)
        }
        await session.close()
        await harness.close()
    }
}

import Foundation
import HTTP
@testable import SupportConsole
import XCTest

/// Every state, outcome, alert kind, reason and Apple
/// status shown has its meaning and what to do beside it.
final class ConsoleExplanationsTests: XCTestCase {
    func testEveryWordTheConsoleShowsHasAMeaning() {
        for word in JobVocabulary.states + JobVocabulary.outcomes + ["paid_not_credited", "receipt_replay", "stuck_verification",
                                                                     "config_error", "consumption_failed", "no_open_order", "buyer_unknown",
                                                                     "apple_status_21004", "unfinished_retrying", "api_4000043"] {
            XCTAssertNotNil(Explanations.word(word), word)
        }
        XCTAssertTrue(Explanations.word("apple_status_21004")?.contains("shared secret") ?? false)
        XCTAssertEqual(Explanations.lastError("1000005:paid_not_credited").first?.hasPrefix("Transaction 1000005: paid_not_credited — Apple says the buyer paid"), true)
        XCTAssertTrue(Explanations.appleStatus(0).contains("accepted"))
    }

    func testPagesShowTheMeaningsBesideTheCodes() async throws {
        let harness = try await ConsoleHarness(lookup: FakeOrderLookup())
        let session = try ConsoleSession(baseURL: harness.baseURL)
        _ = try await session.signIn("sam", password: ConsoleHarness.password)
        _ = try await harness.client.query("UPDATE iap.jobs SET last_error = '2000000000000001:paid_not_credited' WHERE id = $1",
                                           [harness.fixture.attentionJob])
        let job = try await session.get("/jobs/\(harness.fixture.attentionJob)").text
        XCTAssertTrue(job.contains("attention: Finished, but a person must act"), job)
        XCTAssertTrue(job.contains("Apple status 0: Apple&#39;s verifyReceipt") || job.contains("Apple status 0: Apple's verifyReceipt"), job)
        XCTAssertTrue(job.contains("Transaction 2000000000000001: paid_not_credited — Apple says the buyer paid"))
        let alerts = try await session.get("/alerts").text
        XCTAssertTrue(alerts.contains("no_matching_order <span class=\"why\">"), "the reason is explained beside it")
        XCTAssertTrue(alerts.contains("<details class=\"legend\" open><summary>What these words mean</summary>"))
        XCTAssertTrue(alerts.contains("Find the buyer&#39;s order and credit the payment to it") || alerts.contains("Find the buyer's order and credit the payment to it"))
        let jobs = try await session.get("/jobs").text
        XCTAssertTrue(jobs.contains("<dt>paid_not_credited</dt>") && jobs.contains("title=\"Apple says the buyer paid"), "legend and tooltips")
        let lookup = try await session.get("/lookup").text
        XCTAssertFalse(lookup.contains("SPEC"), "support does not read the SPEC")
        XCTAssertTrue(lookup.contains("receipt e-mail from Apple"))
        await session.close()
        await harness.close()
    }
}

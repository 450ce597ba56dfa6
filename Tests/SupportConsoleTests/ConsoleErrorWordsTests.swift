import Foundation
import HTTP
import Postgres
import Settlement
@testable import SupportConsole
import XCTest

/// Errors and Back: each failure in its own words, inline on the
/// page it came from with the input kept, every form answered with a redirect.
final class ConsoleErrorWordsTests: XCTestCase {
    /// Apple's answer when the App Store Server API key is wrong (Settlement maps 401/403 to this).
    struct RefusedCredentials: AppleOrderLookup {
        func lookUp(appleOrderID: String) async throws -> [SupportConsole.LookedUpTransaction] {
            throw OrderLookupError.appleUnavailable("credentials_refused")
        }
        func credit(appleOrderID: String, transactionID: String, userID: String, orderID: String, actor: String,
                    alsoInTransaction: @escaping @Sendable (PostgresConnection, String) async throws -> Void) async throws -> String {
            throw OrderLookupError.appleUnavailable("credentials_refused")
        }
    }

    func testRefusedAppleCredentialsAreNotCalledADatabaseFailureAndTheFailedLookupIsAudited() async throws {
        let harness = try await ConsoleHarness(lookup: RefusedCredentials())
        let session = try ConsoleSession(baseURL: harness.baseURL)
        _ = try await session.signIn("sam", password: ConsoleHarness.password)
        let posted = try await session.post("/lookup", [("csrf", try await session.csrfToken()), ("apple_order_id", "MK5TTTVWJH")])
        XCTAssertEqual(posted.status, 303)
        let page = try await session.get(try XCTUnwrap(posted.header("Location")))
        XCTAssertTrue(page.text.contains("Apple refused this console&#39;s App Store Server API credentials")
                      || page.text.contains("Apple refused this console's App Store Server API credentials"), page.text)
        XCTAssertFalse(page.text.contains("database did not answer"))
        XCTAssertTrue(page.text.contains("value=\"MK5TTTVWJH\""), "the typed order id is kept")
        let failed: Int = try await harness.scalar(
            "SELECT count(*) FROM iap.audit_log WHERE action = 'lookup' AND details->>'result' = 'failed'")
        XCTAssertEqual(failed, 1, "a failed lookup is audited")
        await session.close()
        await harness.close()
    }

    func testARefusalIsShownInlineOnThePageTheFormCameFrom() async throws {
        let harness = try await ConsoleHarness()
        let session = try ConsoleSession(baseURL: harness.baseURL)
        _ = try await session.signIn("sam", password: ConsoleHarness.password)
        let alert = harness.fixture.paidNotCreditedAlert
        let userPage = try await session.get("/users?id=alice")
        XCTAssertTrue(userPage.text.contains("name=\"return_to\" value=\"/users?id=alice\""), "forms know the page they are on")
        let refused = try await session.post("/alerts/\(alert)/credit", [("csrf", try await session.csrfToken()), ("order_id", "order-nobody"),
                                                                          ("return_to", "/users?id=alice")])
        let location = try XCTUnwrap(refused.header("Location"))
        XCTAssertTrue(location.hasPrefix("/users?id=alice&flash="), location)
        let back = try await session.get(location)
        XCTAssertTrue(back.text.contains("Not credited: there is no order order-nobody"), back.text)
        XCTAssertTrue(back.text.contains("value=\"order-nobody\""))
        let offSite = try await session.post("/alerts/\(alert)/resolve", [("csrf", try await session.csrfToken()), ("note", ""),
                                                                           ("return_to", "//evil.example/x")])
        XCTAssertTrue(try XCTUnwrap(offSite.header("Location")).hasPrefix("/alerts?flash="), "never redirected off the console")
        // Another person's result token reads as nothing.
        let other = try ConsoleSession(baseURL: harness.baseURL)
        _ = try await other.signIn("vera", password: ConsoleHarness.password)
        let page1 = try await other.get(location)
        XCTAssertFalse(page1.text.contains("order-nobody"))
        await other.close()
        await session.close()
        await harness.close()
    }

    func testAConflictIsNotHeadedBadRequestAndBackReloadsACachedPage() async throws {
        XCTAssertEqual(MessagePage.title(status: 409), "Not done: it conflicts with the current state")
        XCTAssertEqual(MessagePage.title(status: 400), "Bad request")
        XCTAssertTrue(StaticAssets.script.contains("event.persisted") && StaticAssets.script.contains("location.reload()"))
        let harness = try await ConsoleHarness()
        let session = try ConsoleSession(baseURL: harness.baseURL)
        _ = try await session.signIn("sam", password: ConsoleHarness.password)
        session.extraHeaders = [("Referer", "http://127.0.0.1/jobs?q=alice")]
        let bad = try await session.get("/jobs?state=bogus")
        XCTAssertTrue(bad.text.contains("href=\"/jobs?q=alice\""), "a way back to where the person was, not only the overview")
        await session.close()
        await harness.close()
    }
}

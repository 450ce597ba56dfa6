import Foundation
import HTTP
import XCTest

/// The alert forms' smaller truths: among several open orders none is chosen for support (unless
/// the receipt named one); closing a config_error or a receipt_replay asks first; a resolved alert
/// says when; explanations show no markup characters.
final class ConsoleAlertFormsTests: XCTestCase {
    func testTheAlertFormsAskAndChooseNothingForSupport() async throws {
        let harness = try await ConsoleHarness()
        let client = harness.client
        _ = try await client.query("INSERT INTO iap.orders (order_id, user_id, product_id, status) VALUES ('order-alice-2', 'alice', 'coins_100', 'open')")
        _ = try await client.query("""
            INSERT INTO iap.alerts (kind, job_id, user_id, reason) VALUES ('config_error', NULL, NULL, 'apple_status_21004'),
                ('receipt_replay', NULL, 'mallory', 'credited_to_another_user')
            """)
        let session = try ConsoleSession(baseURL: harness.baseURL)
        _ = try await session.signIn("sam", password: ConsoleHarness.password)
        let alert = harness.fixture.paidNotCreditedAlert
        let several = try await session.get("/alerts").text
        let picker = try XCTUnwrap(several.range(of: "action=\"/alerts/\(alert)/credit\"").map { String(several[$0.lowerBound...].prefix(1500)) })
        XCTAssertTrue(picker.contains("<option value=\"\" selected>choose an order…</option>"), picker)
        XCTAssertFalse(picker.contains("<option value=\"order-alice-2\" selected"), "the newest is not chosen for support")
        XCTAssertFalse(several.contains("`"), "no markup characters shown")
        XCTAssertTrue(several.contains("data-confirm=\"Resolve this config_error? Resolving does not fix the setting"), several)
        XCTAssertTrue(several.contains("data-confirm=\"Resolve this receipt_replay? Nothing was credited to mallory"), several)

        // The order the receipt named is the choice.
        _ = try await client.query("UPDATE iap.alerts SET order_id = 'order-alice-1' WHERE id = $1", [alert])
        let named = try await session.get("/alerts").text
        XCTAssertTrue(named.contains("<option value=\"order-alice-1\" selected>"), named)
        XCTAssertFalse(named.contains("choose an order…</option><option value=\"order-alice-1\""))
        // Nothing chosen and nothing typed: refused in words, nothing credited.
        _ = try await client.query("UPDATE iap.alerts SET order_id = NULL WHERE id = $1", [alert])
        let empty = try await session.post("/alerts/\(alert)/credit", [("csrf", try await session.csrfToken()), ("order_choice", "")])
        XCTAssertEqual(empty.status, 303)
        let refused = try await session.get(try XCTUnwrap(empty.header("Location"))).text
        XCTAssertTrue(refused.contains("The order id is required."), refused)

        let resolved = try await session.post("/alerts/\(harness.fixture.alertToResolve)/resolve", [("csrf", try await session.csrfToken()),
            ("note", "refunded by Apple"), ("confirm_no_credit", "yes")])
        XCTAssertEqual(resolved.status, 303)
        let at: String = try await harness.scalar("SELECT to_char(resolved_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI') FROM iap.alerts WHERE id = $1",
                                                  [harness.fixture.alertToResolve])
        let page = try await session.get("/alerts").text
        XCTAssertTrue(page.contains("<span class=\"why block\">at \(at)"), page)
        await session.close()
        await harness.close()
    }
}

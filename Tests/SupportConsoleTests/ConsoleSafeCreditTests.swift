import Foundation
import HTTP
import XCTest

/// Safe crediting: support chooses among the buyer's open orders for the
/// product, the confirm names user, product, transaction and order, and closing a
/// paid_not_credited alert without paying asks first.
final class ConsoleSafeCreditTests: XCTestCase {
    func testTheCreditFormOffersTheBuyersOpenOrdersForTheProduct() async throws {
        let harness = try await ConsoleHarness()
        _ = try await harness.client.query("""
            INSERT INTO iap.orders (order_id, user_id, product_id, status) VALUES
                ('order-alice-2', 'alice', 'coins_100', 'open'), ('order-alice-gems', 'alice', 'gems_50', 'open'),
                ('order-alice-old', 'alice', 'coins_100', 'credited')
            """)
        let session = try ConsoleSession(baseURL: harness.baseURL)
        _ = try await session.signIn("sam", password: ConsoleHarness.password)
        let alert = harness.fixture.paidNotCreditedAlert
        for path in ["/alerts", "/users?id=alice"] {
            let page = try await session.get(path).text
            XCTAssertTrue(page.contains("<option value=\"order-alice-1\""), path)
            XCTAssertTrue(page.contains("<option value=\"order-alice-2\""), path)
            XCTAssertFalse(page.contains("<option value=\"order-alice-gems\""), "\(path): another product's order is not offered")
            XCTAssertFalse(page.contains("<option value=\"order-alice-old\""), "\(path): a credited order is not offered")
            XCTAssertTrue(page.contains("data-user=\"alice\" data-product=\"coins_100\" data-transaction=\"2000000000000001\""), path)
        }
        let alertsPage = try await session.get("/alerts").text
        XCTAssertTrue(alertsPage.contains("#\(alert)</span> <span class=\"why\">job</span> <a href=\"/jobs/\(harness.fixture.attentionJob)\">"),
                      "support keeps a link to the alert's job beside the action forms")
        let carl = try await session.get("/users?id=carl").text
        XCTAssertTrue(carl.contains("<option value=\"order-carl-1\""))
        let hostile = try await session.get("/alerts").text
        XCTAssertTrue(hostile.contains("No open order of &lt;img src=x onerror=alert(1)&gt; for coins_100"), "free text when no order is open")
        // Choosing from the list is enough; nothing typed.
        let credited = try await session.post("/alerts/\(alert)/credit", [("csrf", try await session.csrfToken()), ("order_choice", "order-alice-2")])
        XCTAssertEqual(credited.status, 303)
        let order: String = try await harness.scalar("SELECT order_id FROM iap.credits WHERE transaction_id = '2000000000000001'")
        XCTAssertEqual(order, "order-alice-2")
        await session.close()
        await harness.close()
    }

    func testResolvingAPaidNotCreditedAlertWithoutPayingNeedsTheConfirmationServerSide() async throws {
        let harness = try await ConsoleHarness()
        let session = try ConsoleSession(baseURL: harness.baseURL)
        _ = try await session.signIn("sam", password: ConsoleHarness.password)
        let page = try await session.get("/alerts").text
        let form = try XCTUnwrap(page.range(of: "action=\"/alerts/\(harness.fixture.alertToResolve)/resolve\"").map { page[$0.lowerBound...].prefix(900) })
        XCTAssertTrue(form.contains("data-confirm=\"Resolve without crediting? carl paid for gems_50 (transaction 2000000000000003)"), String(form))
        XCTAssertTrue(form.contains("name=\"confirm_no_credit\" value=\"yes\" required"), "asked without JavaScript too")

        // The browser's `required` is a courtesy: a POST without the confirmation is refused by the
        // server, comes back inline on the page it came from with the note kept, and changes nothing.
        let alert = harness.fixture.alertToResolve
        let refused = try await session.post("/alerts/\(alert)/resolve", [("csrf", try await session.csrfToken()),
                                                                           ("return_to", "/users?id=carl"), ("note", "buyer <gave up>")])
        XCTAssertEqual(refused.status, 303)
        let back = try await session.get(try XCTUnwrap(refused.header("Location")))
        XCTAssertTrue(back.text.contains("tick “the buyer is owed nothing”"), back.text)
        XCTAssertTrue(back.text.contains("value=\"buyer &lt;gave up&gt;\""), "the note as typed, escaped")
        let stillOpen: String = try await harness.scalar("SELECT state FROM iap.alerts WHERE id = $1", [alert])
        XCTAssertEqual(stillOpen, "open")
        let audited: Int = try await harness.scalar("SELECT count(*)::int FROM iap.audit_log WHERE action = 'resolve'")
        XCTAssertEqual(audited, 0, "nothing changed, nothing recorded as done")

        let confirmed = try await session.post("/alerts/\(alert)/resolve", [("csrf", try await session.csrfToken()),
            ("return_to", "/users?id=carl"), ("note", "buyer gave up"), ("confirm_no_credit", "yes")])
        XCTAssertEqual(confirmed.status, 303)
        let resolved: String = try await harness.scalar("SELECT state FROM iap.alerts WHERE id = $1", [alert])
        XCTAssertEqual(resolved, "resolved")
        await session.close()
        await harness.close()
    }
}

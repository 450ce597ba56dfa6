import Foundation
import HTTP
import Postgres
import SupportConsole
import TestSupport
import XCTest

/// The Reconciliation page: reconciled days newest first by keyset, each day's status and per
/// product Apple's numbers against the ledger's, links to the gap alerts, every value escaped.
final class ConsoleReconciliationTests: XCTestCase {
    static let hostileProduct = "<script>alert('sku')</script>"

    /// 16 days, 2026-10-01 … 2026-10-16: the newest has a gap (a hostile product id, an open alert),
    /// the 15th is not yet available, the 14th had no sales, the rest are clean.
    static func load(_ client: PostgresClient) async throws -> Int {
        _ = try await client.query("""
            INSERT INTO iap.reconciliation_checks (day, status, no_sales, checked_at)
            SELECT d::date, CASE d::date WHEN '2026-10-16' THEN 'gap' WHEN '2026-10-15' THEN 'not_available' ELSE 'clean' END,
                   d::date = '2026-10-14', now()
            FROM generate_series('2026-10-01'::date, '2026-10-16'::date, interval '1 day') AS d
            """)
        _ = try await client.query("""
            INSERT INTO iap.reconciliation_days (day, product_id, apple_units, apple_returns, credited, revoked)
            SELECT d::date, 'coins_100', 40, 1, 40, 1 FROM generate_series('2026-10-01'::date, '2026-10-13'::date, interval '1 day') AS d
            UNION ALL VALUES ('2026-10-16'::date, $1, 7, 2, 5, 1), ('2026-10-16'::date, 'coins_100', 12, 0, 12, 0)
            """, [hostileProduct])
        _ = try await client.query("""
            INSERT INTO iap.alerts (kind, product_id, reason, details, state, resolved_at, resolution)
            VALUES ('reconciliation_gap', 'coins_100', 'Apple sold 1 more unit(s)', '{"day":"2026-10-16"}', 'resolved', now(), 'reconciled')
            """)
        return try await client.query("""
            INSERT INTO iap.alerts (kind, product_id, reason, details)
            VALUES ('reconciliation_gap', $1, 'Apple sold 2 more unit(s)', '{"day":"2026-10-16","difference":"2"}') RETURNING id
            """, [hostileProduct])[0].decode(Int.self, at: 0)
    }

    func testDaysAreListedNewestFirstWithTheirNumbersAndGapAlertsEscaped() async throws {
        let harness = try await ConsoleHarness()
        let alert = try await Self.load(harness.client)
        let session = try ConsoleSession(baseURL: harness.baseURL)
        let stranger = try await session.get("/reconciliation")
        XCTAssertEqual(stranger.status, 303, "signed-in users only")
        XCTAssertEqual(stranger.header("Location"), "/login?next=%2Freconciliation")
        _ = try await session.signIn("vera", password: ConsoleHarness.password)

        let first = try await session.get("/reconciliation")
        XCTAssertEqual(first.status, 200)
        XCTAssertEqual(first.header("X-Frame-Options"), "DENY")
        XCTAssertTrue(first.header("Content-Security-Policy")?.contains("script-src 'self'") ?? false)
        let html = first.text
        XCTAssertTrue(html.contains("href=\"/reconciliation\" aria-current=\"page\""), "a nav entry of its own")
        XCTAssertFalse(html.contains(Self.hostileProduct), "the product id is escaped")
        XCTAssertTrue(html.contains("&lt;script&gt;alert(&#39;sku&#39;)&lt;/script&gt;"), html)
        let order = ["2026-10-16", "2026-10-15", "2026-10-14", "2026-10-03"].map { html.range(of: "id=\"day-\($0)\"")?.lowerBound }
        XCTAssertEqual(order.compactMap { $0 }, order.compactMap { $0 }.sorted(), "newest first")
        XCTAssertEqual(order.compactMap { $0 }.count, 4)
        XCTAssertNil(html.range(of: "id=\"day-2026-10-02\""), "14 days a page")
        XCTAssertTrue(html.contains("href=\"/reconciliation?before=2026-10-03\""), "the next page by keyset on the day")
        // Each status word with its meaning beside it.
        for word in ["clean", "gap", "not_available", "no sales", "returns gap"] {
            XCTAssertTrue(html.contains("<dt>\(word)</dt>"), word)
        }
        XCTAssertTrue(html.contains("Apple has not published this day"), html)
        XCTAssertTrue(html.contains("<strong>+2</strong>"), "Apple's 7 units against 5 credited")
        XCTAssertTrue(html.contains("<strong>+1</strong>"), "2 returns against 1 revocation")
        // The open alert, linked where it heads the alerts page, and the kind's list.
        let link = "/alerts?kind=reconciliation_gap&amp;open_before=\(alert + 1)#alert-\(alert)"
        XCTAssertTrue(html.contains("href=\"\(link)\""), html)
        XCTAssertTrue(html.contains("href=\"/alerts?kind=reconciliation_gap\""))
        let alerts = try await session.get(link.replacingOccurrences(of: "&amp;", with: "&").components(separatedBy: "#")[0])
        XCTAssertEqual(alerts.status, 200)
        XCTAssertTrue(alerts.text.contains("id=\"alert-\(alert)\""), alerts.text)

        let older = try await session.get("/reconciliation?before=2026-10-03")
        XCTAssertEqual(older.status, 200)
        XCTAssertTrue(older.text.contains("id=\"day-2026-10-02\"") && older.text.contains("id=\"day-2026-10-01\""))
        XCTAssertFalse(older.text.contains("id=\"day-2026-10-16\""))
        XCTAssertTrue(older.text.contains("href=\"/reconciliation\">← Newest"))
        XCTAssertFalse(older.text.contains("Older days"))

        let bad = try await session.get("/reconciliation?before=2026-02-30")
        XCTAssertEqual(bad.status, 400)
        XCTAssertTrue(harness.registry.render().contains("iap_console_requests_total{page=\"reconciliation\",status=\"200\"}"))
        await session.close()
        await harness.close()
    }

    func testAnEmptyBookSaysSo() async throws {
        let harness = try await ConsoleHarness()
        let session = try ConsoleSession(baseURL: harness.baseURL)
        _ = try await session.signIn("sam", password: ConsoleHarness.password)
        let page = try await session.get("/reconciliation")
        XCTAssertEqual(page.status, 200)
        XCTAssertTrue(page.text.contains("No day has been reconciled yet."))
        await session.close()
        await harness.close()
    }
}

/// The Reconciliation page in headless Chromium at laptop and phone size: nothing wider than the screen,
/// screenshots kept with the others under `.build/console-screenshots/`.
final class ConsoleReconciliationBrowserTests: XCTestCase {
    func testThePageFitsALaptopAndAPhone() async throws {
        try await withBrowser { browser, harness in
            _ = try await ConsoleReconciliationTests.load(harness.client)
            try await signIn(browser, harness, as: "vera")
            for (width, height, device) in [(1280, 800, "laptop"), (390, 844, "phone")] {
                try await browser.setWindow(width: width, height: height)
                try await browser.open(harness.baseURL + "/reconciliation")
                let overflow = try await browser.execute("return document.documentElement.scrollWidth - document.documentElement.clientWidth") as? Int
                XCTAssertEqual(overflow, 0, "\(device): the page is wider than the window")
                try await browser.screenshot(to: "\(ConsoleBrowserTests.screenshots)/reconciliation-\(device).png")
            }
        }
    }
}

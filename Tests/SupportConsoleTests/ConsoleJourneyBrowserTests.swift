import Foundation
import SupportConsole
import TestSupport
import XCTest

/// Support's journeys in a real Chromium, at laptop (1280×800) and phone (390×844) size: find a
/// buyer from the header box, read the story and the verdict, credit their paid_not_credited
/// alert through the open-order picker with the confirm, go Back to a page without a live Credit
/// button, and use the console by keyboard only.
final class ConsoleJourneyBrowserTests: XCTestCase {
    static let sizes = [(1280, 800, "laptop"), (390, 844, "phone")]

    func testFindTheBuyerReadTheStoryCreditAndGoBackAtLaptopAndPhoneSize() async throws {
        for (width, height, device) in Self.sizes {
            try await withBrowser { browser, harness in
                try await browser.setWindow(width: width, height: height)
                try await signIn(browser, harness, as: "sam")
                let alert = harness.fixture.paidNotCreditedAlert
                // The header's find box, from the overview.
                try await browser.type("form.find input[name=q]", "alice")
                try await browser.click("form.find button")
                try await expectSoon { try await browser.title().hasPrefix("User alice") }
                let verdict = try await browser.execute("return document.querySelector('p.verdict').innerText;") as? String
                XCTAssertEqual(verdict, "Your payment (Apple transaction 2000000000000001, coins_100) reached us from Apple but is not credited yet.",
                               device)
                let story = try await browser.execute("return Array.from(document.querySelectorAll('ol.timeline li')).map(e => e.innerText);") as? [String] ?? []
                XCTAssertTrue(story.first?.contains("Order order-alice-1 created") == true, "\(device): \(story)")
                XCTAssertTrue(story.contains { $0.contains("Alert #\(alert) raised") }, "\(device): \(story)")
                // Credit through the picker; the confirm names user, product, transaction and order.
                try await browser.execute("window.confirm = function (q) { sessionStorage.setItem('asked', q); return true; };")
                try await expectCount(browser, "form[action='/alerts/\(alert)/credit'] select[name=order_choice] option[value='order-alice-1']", 1)
                try await browser.click("form[action='/alerts/\(alert)/credit'] button")
                try await expectSoon { try await browser.source().contains("credited to order order-alice-1 and resolved") }
                // The outcome is beside the alert's row, and on screen after the POST.
                let outcome = try await browser.execute("return document.getElementById('outcome').innerText;") as? String
                XCTAssertEqual(outcome, "Alert #\(alert): credited to order order-alice-1 and resolved.", device)
                try await expectInView(browser, "#outcome", device)
                let live = try await browser.execute("return document.querySelector('[aria-live]').textContent;") as? String
                XCTAssertEqual(live, outcome, "\(device): and in the page's live region")
                let asked = try await browser.execute("return sessionStorage.getItem('asked');") as? String
                XCTAssertEqual(asked, "Credit coins_100 (Apple transaction 2000000000000001) of user alice to order order-alice-1?", device)
                let credited = try await browser.execute("return document.querySelector('p.verdict').innerText;") as? String ?? ""
                XCTAssertTrue(credited.hasPrefix("Credited coins_100 to order order-alice-1 at ") && credited.hasSuffix(" (Apple transaction 2000000000000001)."),
                              "\(device): \(credited)")
                // Back to the page as it was before the credit: reloaded, no live Credit button.
                _ = try await browser.execute("history.back(); return true;")
                try await expectSoon { try await browser.currentURL().hasSuffix("/users?id=alice") }
                try await expectSoon { try await browser.count("form[action='/alerts/\(alert)/credit']") == 0 }
                let after = try await browser.execute("return document.querySelector('p.verdict').innerText;") as? String ?? ""
                XCTAssertTrue(after.hasPrefix("Credited coins_100"), "\(device): Back shows today's verdict, not the snapshot: \(after)")
            }
        }
    }

    /// A stale tab: the alert was closed elsewhere after the page loaded. The refusal (not a
    /// success-looking "resolved") is shown beside the alert's row, on screen.
    func testAStaleTabsRefusalIsShownBesideTheRowAtLaptopAndPhoneSize() async throws {
        for (width, height, device) in Self.sizes {
            try await withBrowser { browser, harness in
                try await browser.setWindow(width: width, height: height)
                try await signIn(browser, harness, as: "sam")
                let alert = harness.fixture.alertToResolve
                try await browser.open(harness.baseURL + "/alerts")
                _ = try await harness.client.query("""
                    UPDATE iap.alerts SET state = 'resolved', resolved_at = now(), resolution = 'credited to order order-carl-1 by demo' WHERE id = $1
                    """, [alert])
                try await browser.execute("window.confirm = function () { return true; };")
                try await browser.click("form[action='/alerts/\(alert)/credit'] button")
                try await expectSoon { try await browser.source().contains("id=\"outcome\"") }
                let outcome = try await browser.execute("return document.getElementById('outcome').innerText;") as? String ?? ""
                XCTAssertTrue(outcome.hasPrefix("Not credited: alert #\(alert) was already resolved"), "\(device): \(outcome)")
                let row = try await browser.execute("return document.getElementById('outcome').closest('tr').querySelector('#alert-\(alert)') !== null;") as? Bool
                XCTAssertEqual(row, true, "\(device): beside the alert's own row")
                try await expectInView(browser, "#outcome", device)
            }
        }
    }

    /// At laptop size the alerts table shows every column, its action forms included, without
    /// scrolling sideways; the legend's summary looks like something to click.
    func testTheAlertsTableFitsALaptopWithItsActionsAndTheLegendLooksClickable() async throws {
        try await withBrowser { browser, harness in
            try await browser.setWindow(width: 1280, height: 800)
            try await signIn(browser, harness, as: "sam")
            try await browser.open(harness.baseURL + "/alerts")
            let fit = try await browser.execute("""
                var s = document.querySelector('.scroll'); var w = document.documentElement.clientWidth;
                var buttons = Array.from(document.querySelectorAll('td form button')).map(function (b) { return b.getBoundingClientRect().right; });
                return [s.scrollWidth - s.clientWidth, Math.max.apply(null, buttons), w];
                """) as? [Double] ?? []
            XCTAssertEqual(fit.first, 0, "the alerts table scrolls sideways: \(fit)")
            XCTAssertLessThanOrEqual(fit.count == 3 ? fit[1] : .infinity, fit.last ?? 0, "every action button is on screen: \(fit)")
            let summary = try await browser.execute("""
                var s = getComputedStyle(document.querySelector('details.legend summary')); return [s.cursor, s.textDecorationLine];
                """) as? [String] ?? []
            XCTAssertEqual(summary, ["pointer", "underline"])
        }
    }

    /// On a phone the header leaves the screen to the alerts: the first alert starts in the top
    /// half of the viewport, below a header of two short rows.
    func testThePhoneHeaderIsCompact() async throws {
        try await withBrowser { browser, harness in
            try await browser.setWindow(width: 390, height: 844)
            try await signIn(browser, harness, as: "sam")
            try await browser.open(harness.baseURL + "/alerts")
            let sizes = try await browser.execute("""
                return [document.querySelector('header.top').getBoundingClientRect().height,
                        document.querySelector('td[data-label=alert]').getBoundingClientRect().top, window.innerHeight];
                """) as? [Double] ?? []
            XCTAssertLessThanOrEqual(sizes.first ?? .infinity, 130, "header height, first alert's top, viewport: \(sizes)")
        }
    }

    func testKeyboardOnlySkipLinkAndFindBoxAtLaptopAndPhoneSize() async throws {
        for (width, height, device) in Self.sizes {
            try await withBrowser { browser, harness in
                try await browser.setWindow(width: width, height: height)
                try await signIn(browser, harness, as: "vera")
                try await browser.open(harness.baseURL + "/alerts")
                // The first Tab reaches the skip link; Enter puts the focus on the content.
                try await browser.press(WebDriver.tab)
                let first = try await browser.execute("return document.activeElement.className;") as? String
                XCTAssertEqual(first, "skip", device)
                try await browser.press(WebDriver.enter)
                try await expectSoon { (try await browser.execute("return document.activeElement.id;") as? String) == "main" }
                // From the top again, Tab reaches the find box within a few presses; Enter submits it.
                try await browser.open(harness.baseURL + "/alerts")
                var presses = 0, onFindBox = false
                while presses < 12 && !onFindBox {
                    try await browser.press(WebDriver.tab)
                    presses += 1
                    onFindBox = try await browser.execute("return document.activeElement.matches('form.find input[name=q]');") as? Bool ?? false
                }
                XCTAssertTrue(onFindBox, "\(device): the find box is reachable by Tab")
                try await browser.press("bob" + WebDriver.enter)
                try await expectSoon { try await browser.title().hasPrefix("User bob") }
                let verdict = try await browser.execute("return document.querySelector('p.verdict').innerText;") as? String ?? ""
                XCTAssertTrue(verdict.hasPrefix("Credited coins_100 to order order-bob-1 at "), "\(device): \(verdict)")
            }
        }
    }
}

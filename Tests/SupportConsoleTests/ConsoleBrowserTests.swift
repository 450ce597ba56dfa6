import Foundation
import SupportConsole
import TestSupport
import XCTest

/// The console in a real headless Chromium: the support desk's day, the refusals, hostile data,
/// and a screenshot of every page at laptop (1280×800) and phone (390×844) size, kept under
/// `.build/console-screenshots/` as CI artifacts, or under `CONSOLE_SCREENSHOTS_DIR` when set
/// (`scripts/console-screenshots.sh` refreshes the pictures in docs/images that way).
final class ConsoleBrowserTests: XCTestCase {
    static let screenshots = ProcessInfo.processInfo.environment["CONSOLE_SCREENSHOTS_DIR"]
        ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/console-screenshots").path

    func testSupportSearchesOpensAJobCreditsAndResolves() async throws {
        try await withBrowser { browser, harness in
            try await signIn(browser, harness, as: "sam")
            // Search a user.
            try await browser.open(harness.baseURL + "/jobs")
            try await browser.type("form.search input[name=q]", "alice")
            try await browser.click("form.search button")
            try await expectSoon { try await browser.currentURL().contains("q=alice") }
            try await expectCount(browser, "tbody tr", 1)
            // Open the job.
            try await browser.click("tbody tr a[href^='/jobs/']")
            try await expectSoon { try await browser.title().hasPrefix("Job #\(harness.fixture.attentionJob)") }
            let job = try await browser.source()
            XCTAssertTrue(job.contains("no open order for coins_100"))
            // Credit the paid_not_credited alert to the order, then see the ledger row and the audit entry.
            let alert = harness.fixture.paidNotCreditedAlert
            try await browser.open(harness.baseURL + "/alerts")
            try await browser.execute("window.confirm = function (q) { sessionStorage.setItem('asked', q); return true; };")
            // The buyer's open order for the product is offered; the confirm names who, what and where.
            try await expectCount(browser, "form[action='/alerts/\(alert)/credit'] select[name=order_choice] option[value='order-alice-1']", 1)
            try await browser.click("form[action='/alerts/\(alert)/credit'] button")
            try await expectSoon { try await browser.source().contains("credited to order order-alice-1 and resolved") }
            let asked = try await browser.execute("return sessionStorage.getItem('asked');") as? String
            XCTAssertEqual(asked, "Credit coins_100 (Apple transaction 2000000000000001) of user alice to order order-alice-1?")
            try await browser.open(harness.baseURL + "/users?id=alice")
            let user = try await browser.source()
            XCTAssertTrue(user.contains("2000000000000001") && user.contains("order-alice-1") && user.contains(">sam<"), "ledger row shown, naming the person who credited")
            try await browser.open(harness.baseURL + "/audit")
            let audit = try await browser.source()
            XCTAssertTrue(audit.contains("alert:\(alert)"))
            // The header's find box jumps straight to the one match, from any page.
            try await browser.type("form.find input[name=q]", "#\(harness.fixture.creditedJob)")
            try await browser.click("form.find button")
            try await expectSoon { try await browser.title().hasPrefix("Job #\(harness.fixture.creditedJob)") }
            // Resolve one with a note.
            let other = harness.fixture.alertToResolve
            try await browser.open(harness.baseURL + "/alerts")
            try await browser.execute("window.confirm = function () { return true; };")
            try await browser.type("form[action='/alerts/\(other)/resolve'] input[name=note]", "refunded by Apple, nothing owed")
            try await browser.click("form[action='/alerts/\(other)/resolve'] input[name=confirm_no_credit]")
            try await browser.click("form[action='/alerts/\(other)/resolve'] button")
            try await expectSoon { try await browser.source().contains("Alert #\(other): resolved.") }
            let resolution: String = try await harness.scalar("SELECT resolution FROM iap.alerts WHERE id = $1", [other])
            XCTAssertTrue(resolution.hasPrefix("refunded by Apple"))
        }
    }

    func testViewerAndForgedFormsAreRefused() async throws {
        try await withBrowser { browser, harness in
            try await signIn(browser, harness, as: "vera")
            try await browser.open(harness.baseURL + "/alerts")
            try await expectCount(browser, "form[action$='/credit']", 0)
            // The viewer submits a credit anyway, with her own valid CSRF token.
            try await browser.execute(Self.postFormScript, ["/alerts/\(harness.fixture.paidNotCreditedAlert)/credit", "keep", "order-alice-1"])
            try await expectSoon { try await browser.source().contains("may read but not act") }
            // Support with a missing token, then with a stale one (from before signing in again).
            try await signIn(browser, harness, as: "sam")
            try await browser.open(harness.baseURL + "/alerts")
            try await browser.execute(Self.postFormScript, ["/alerts/\(harness.fixture.alertToResolve)/resolve", "drop", "note"])
            try await expectSoon { try await browser.source().contains("CSRF token missing or stale") }
            try await browser.open(harness.baseURL + "/alerts")
            let stale = try await browser.execute("return document.querySelector('input[name=csrf]').value;") as? String ?? ""
            try await browser.click("header form button")   // sign out
            try await signIn(browser, harness, as: "sam")
            try await browser.open(harness.baseURL + "/alerts")
            try await browser.execute(Self.postFormScript, ["/alerts/\(harness.fixture.alertToResolve)/resolve", stale, "note"])
            try await expectSoon { try await browser.source().contains("CSRF token missing or stale") }
            let open: Int = try await harness.scalar("SELECT count(*) FROM iap.alerts WHERE state = 'open'")
            XCTAssertEqual(open, 3, "nothing was changed")
            let ledger: Int = try await harness.scalar("SELECT count(*) FROM iap.credits")
            XCTAssertEqual(ledger, 1)
        }
    }

    func testAHostileUserIDRendersAsTextAndRunsNoScript() async throws {
        try await withBrowser { browser, harness in
            try await signIn(browser, harness, as: "sam")
            let ownScriptRan = try await browser.execute("return document.documentElement.classList.contains('js');") as? Bool
            XCTAssertEqual(ownScriptRan, true, "the CSP lets the console's own same-origin script run")
            for path in ["/alerts", "/users?id=" + (ConsoleHarness.xssUser.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""),
                         "/jobs?q=%3Cimg", "/jobs/\(harness.fixture.attentionJob + 3)"] {
                try await browser.open(harness.baseURL + path)
                let dialog = try await browser.openDialogText()
                XCTAssertNil(dialog, "\(path): a dialog opened, so the payload ran")
                try await expectCount(browser, "img", 0)
                try await expectCount(browser, "script:not([src])", 0)
                let text = try await browser.execute("return document.body.innerText;") as? String ?? ""
                if path == "/alerts" { XCTAssertTrue(text.contains(ConsoleHarness.xssUser), "the user id shows as text") }
            }
        }
    }

    func testScreenshotsOfEveryPageAtLaptopAndPhoneSize() async throws {
        try await withBrowser(lookup: FakeOrderLookup()) { browser, harness in
            try await browser.open(harness.baseURL + "/login")
            for (width, height, device) in [(1280, 800, "laptop"), (390, 844, "phone")] {
                try await browser.setWindow(width: width, height: height)
                try await browser.open(harness.baseURL + "/login")
                try await browser.screenshot(to: "\(Self.screenshots)/login-\(device).png")
            }
            try await signIn(browser, harness, as: "sam")
            let pages = [("overview", "/"), ("jobs", "/jobs"), ("job", "/jobs/\(harness.fixture.attentionJob)"), ("user", "/users?id=alice"), ("user-credited", "/users?id=bob"),
                         ("alerts", "/alerts"), ("lookup", "/lookup"), ("audit", "/audit")]
            for (width, height, device) in [(1280, 800, "laptop"), (390, 844, "phone")] {
                try await browser.setWindow(width: width, height: height)
                for (name, path) in pages {
                    try await browser.open(harness.baseURL + path)
                    try await browser.screenshot(to: "\(Self.screenshots)/\(name)-\(device).png")
                }
                try await browser.open(harness.baseURL + "/lookup")
                try await browser.type("input[name=apple_order_id]", "MK5TTTVWJH")
                try await browser.click("form.search button")
                try await expectSoon { try await browser.source().contains("2000000000000099") }
                try await browser.screenshot(to: "\(Self.screenshots)/lookup-result-\(device).png")
            }
            let files = try FileManager.default.contentsOfDirectory(atPath: Self.screenshots).filter { $0.hasSuffix(".png") }
            XCTAssertGreaterThanOrEqual(files.count, 20)
        }
    }

    /// Phone and keyboard: at phone size every control is at least 44 px tall, chart
    /// labels keep a readable size, the first Tab reaches a skip link, and signing in lands on the
    /// page that asked for it; Back to a credited alert reloads it rather than showing the snapshot.
    func testPhoneTouchTargetsSkipLinkSignInLandingAndBackAfterACredit() async throws {
        try await withBrowser { browser, harness in
            try await browser.setWindow(width: 390, height: 844)
            try await browser.open(harness.baseURL + "/users?id=alice")
            try await expectSoon { try await browser.currentURL().contains("/login?next=") }
            try await browser.type("input[name=user]", "sam")
            try await browser.type("input[name=password]", ConsoleHarness.password)
            try await browser.click("form.login button")
            try await expectSoon { try await browser.title().hasPrefix("User alice") }
            for path in ["/", "/alerts", "/users?id=alice", "/jobs"] {
                try await browser.open(harness.baseURL + path)
                let small = try await browser.execute("""
                    return Array.from(document.querySelectorAll('button, input:not([type=hidden]):not([type=checkbox]), select, main a, header a'))
                      .filter(e => e.offsetParent !== null && !e.classList.contains('skip'))
                      .filter(e => (e.closest('.tile') || e).getBoundingClientRect().height < 44)  // a tile's link covers the tile
                      .map(e => e.outerHTML.slice(0, 80));
                    """) as? [String] ?? ["(script failed)"]
                XCTAssertEqual(small, [], "\(path): touch targets under 44 px")
            }
            try await browser.open(harness.baseURL + "/")
            let chartText = try await browser.execute("""
                return Math.min.apply(null, Array.from(document.querySelectorAll('figure.chart .axis-labels span, ul.hbars li'))
                  .map(e => parseFloat(getComputedStyle(e).fontSize)));
                """) as? Double ?? 0
            XCTAssertGreaterThanOrEqual(chartText, 11, "chart labels readable on a phone")
            let first = try await browser.execute("""
                document.activeElement && document.activeElement.blur();
                return document.querySelector('body a').className + ' ' + document.querySelector('body a').getAttribute('href');
                """) as? String
            XCTAssertEqual(first, "skip #main", "the first link on every page skips to the content")
            // Credit, then Back: the page comes from the server again, the alert no longer open.
            let alert = harness.fixture.paidNotCreditedAlert
            try await browser.open(harness.baseURL + "/alerts")
            try await browser.execute("window.confirm = function () { return true; };")
            try await browser.click("form[action='/alerts/\(alert)/credit'] button")
            try await expectSoon { try await browser.source().contains("credited to order order-alice-1 and resolved") }
            _ = try await browser.execute("history.back(); return true;")
            try await expectSoon { try await browser.count("form[action='/alerts/\(alert)/credit']") == 0 }
        }
    }

    /// Posts a copy of the page's own form to `action`: arguments are the action, what to do with
    /// the CSRF field ("keep" the page's, "drop" it, or a token to use instead) and a field to fill.
    static let postFormScript = """
        var action = arguments[0], csrf = arguments[1], field = arguments[2];
        var form = document.createElement('form');
        form.method = 'post'; form.action = action;
        if (csrf !== 'drop') {
          var token = document.createElement('input');
          token.type = 'hidden'; token.name = 'csrf';
          token.value = csrf === 'keep' ? document.querySelector('input[name=csrf]').value : csrf;
          form.appendChild(token);
        }
        var input = document.createElement('input');
        input.type = 'hidden'; input.name = field; input.value = field === 'order_id' ? 'order-alice-1' : 'from a test';
        form.appendChild(input);
        document.body.appendChild(form);
        form.submit();
        """
}

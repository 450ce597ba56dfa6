import Foundation
import SupportConsole
import TestSupport
import XCTest

/// What the browser tests share: a browser and a console per test, signing in, and waiting for
/// the page to show what is expected.
extension XCTestCase {
    /// A browser and a console for `body`, both stopped afterwards whether it passed or threw.
    func withBrowser(lookup: (any AppleOrderLookup)? = nil,
                     _ body: (WebDriver, ConsoleHarness) async throws -> Void) async throws {
        guard WebDriver.isInstalled else {
            throw XCTSkip("chromium and chromium-driver are not installed (.ci/run installs them)")
        }
        let browser = try await WebDriver.start()
        let harness: ConsoleHarness
        // The default, Secure __Host- cookies: Chromium keeps them from http://127.0.0.1 (loopback counts as secure).
        do { harness = try await ConsoleHarness(lookup: lookup) } catch {
            await browser.quit()
            throw error
        }
        do {
            try await body(browser, harness)
        } catch {
            await browser.quit()
            await harness.close()
            throw error
        }
        await browser.quit()
        await harness.close()
    }

    func signIn(_ browser: WebDriver, _ harness: ConsoleHarness, as user: String) async throws {
        try await browser.open(harness.baseURL + "/login")
        try await browser.type("input[name=user]", user)
        try await browser.type("input[name=password]", ConsoleHarness.password)
        try await browser.click("form.login button")
        let signedIn = try await eventually(10) { try await browser.source().contains("Sign out") }
        XCTAssertTrue(signedIn, "sign-in as \(user) did not reach a page with a sign-out button")
    }

    func expectSoon(_ condition: () async throws -> Bool, file: StaticString = #filePath, line: UInt = #line) async throws {
        let held = try await eventually(10, condition)
        XCTAssertTrue(held, "the page never showed what was expected", file: file, line: line)
    }

    /// The element is on screen, whole or at least its top line, without scrolling: where the eye is.
    func expectInView(_ browser: WebDriver, _ css: String, _ device: String, file: StaticString = #filePath, line: UInt = #line) async throws {
        let box = try await browser.execute("""
            var e = document.querySelector(arguments[0]); if (!e) { return null; }
            var r = e.getBoundingClientRect(); return [r.top, r.bottom, window.innerHeight];
            """, [css]) as? [Double]
        let (top, bottom, height) = (box?[0] ?? -1, box?[1] ?? -1, box?[2] ?? 0)
        XCTAssertTrue(top >= 0 && top < height && bottom > 0, "\(device): \(css) at \(top)…\(bottom) of a \(height) px viewport",
                      file: file, line: line)
    }

    func expectCount(_ browser: WebDriver, _ css: String, _ expected: Int, file: StaticString = #filePath, line: UInt = #line) async throws {
        let count = try await browser.count(css)
        XCTAssertEqual(count, expected, css, file: file, line: line)
    }
}

import Foundation
import HTTP
import SupportConsole
import XCTest

/// The demo's printed password opens one session, then never again.
final class ConsoleOneTimePasswordTests: XCTestCase {
    func testAOneTimePasswordWorksForOneSignInAndTheSessionItOpenedStays() async throws {
        var configuration = try ConsoleConfiguration(listen: "127.0.0.1:0")
        configuration.oneTimePasswordUsers = ["sam"]
        let harness = try await ConsoleHarness(configuration: configuration)
        let first = try ConsoleSession(baseURL: harness.baseURL)
        let signedIn = try await first.signIn("sam", password: ConsoleHarness.password)
        XCTAssertEqual(signedIn.status, 303)
        let page = try await first.get("/alerts")
        XCTAssertEqual(page.status, 200, "the session the password opened stays open")
        let second = try ConsoleSession(baseURL: harness.baseURL)
        let again = try await second.signIn("sam", password: ConsoleHarness.password)
        XCTAssertEqual(again.status, 401, "spent")
        let other = try ConsoleSession(baseURL: harness.baseURL)
        let vera = try await other.signIn("vera", password: ConsoleHarness.password)
        let veraAgain = try await other.signIn("vera", password: ConsoleHarness.password)
        XCTAssertEqual([vera.status, veraAgain.status], [303, 303], "other users are unaffected")
        for session in [first, second, other] { await session.close() }
        await harness.close()
    }
}

import Foundation
import HTTP
import SupportConsole
import XCTest

/// Signing in lands on the page that asked for it, and only on a page of this console.
final class ConsoleSignInLandingTests: XCTestCase {
    func testSignInReturnsToWhereYouWereGoingButNeverOffTheConsole() async throws {
        let harness = try await ConsoleHarness()
        for (next, landing) in [("/users?id=alice", "/users?id=alice"), ("//evil.example/x", "/"), ("https://evil.example/", "/"),
                                ("/login", "/")] {
            let session = try ConsoleSession(baseURL: harness.baseURL)
            let form = try await session.get("/login" + FormFields.query(["next": next]))
            let token = ConsoleSession.hiddenField("csrf", in: form.text) ?? ""
            let signedIn = try await session.post("/login", [("csrf", token), ("user", "vera"), ("password", ConsoleHarness.password),
                                                             ("next", ConsoleSession.hiddenField("next", in: form.text) ?? next)])
            XCTAssertEqual(signedIn.header("Location"), landing, next)
            await session.close()
        }
        await harness.close()
    }
}

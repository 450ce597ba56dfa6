import Foundation
import HTTP
import Postgres
import SupportConsole
import TestSupport
import XCTest

/// Sign-in, sessions, CSRF, roles, SSO mode and the audit trail, over plain HTTP.
final class ConsoleAccessTests: XCTestCase {
    func testSignedInPagesCarryTheSecurityHeadersAndNeverThePayload() async throws {
        let harness = try await ConsoleHarness()
        let session = try ConsoleSession(baseURL: harness.baseURL)
        let signIn = try await session.signIn("sam", password: ConsoleHarness.password)
        XCTAssertEqual(signIn.status, 303)
        let cookie = try XCTUnwrap(signIn.headers.first { $0.name == "Set-Cookie" && $0.value.hasPrefix("__Host-rw_console_session=") }?.value)
        XCTAssertTrue(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict") && cookie.contains("Max-Age="), cookie)
        XCTAssertTrue(cookie.contains("; Secure"), "Secure also on loopback: the console usually sits behind a TLS proxy on the same host")
        let fixture = harness.fixture
        for path in ["/", "/jobs", "/jobs?q=alice", "/jobs?q=2000000000000002", "/jobs?q=order-bob-1", "/jobs?q=\(fixture.creditedJob)",
                     "/jobs?state=attention&outcome=paid_not_credited&kind=receipt", "/jobs/\(fixture.attentionJob)",
                     "/jobs/\(fixture.creditedJob)", "/users?id=alice", "/alerts", "/lookup", "/audit"] {
            let page = try await session.get(path)
            XCTAssertEqual(page.status, 200, path)
            XCTAssertEqual(page.header("X-Frame-Options"), "DENY", path)
            XCTAssertTrue(page.header("Content-Security-Policy")?.contains("script-src 'self'") ?? false, path)
            XCTAssertFalse(page.text.contains("cmVjZWlwdC1"), "\(path) shows a receipt payload")
        }
        let search = try await session.get("/jobs?q=2000000000000002")
        XCTAssertTrue(search.text.contains("/jobs/\(fixture.creditedJob)\""), "a transaction id finds the job that credited it")
        let byJobID = try await session.get("/jobs?q=\(fixture.creditedJob)")
        XCTAssertTrue(byJobID.text.contains("order-bob-1"))
        let hostile = try await session.get("/jobs/\(fixture.attentionJob + 3)")
        XCTAssertFalse(hostile.text.contains("<script>alert(2)"), "Apple's error text is escaped")
        XCTAssertTrue(hostile.text.contains("&lt;script&gt;alert(2)"))
        await session.close()
        await harness.close()
    }

    func testPagesNeedASignIn() async throws {
        let harness = try await ConsoleHarness()
        let session = try ConsoleSession(baseURL: harness.baseURL)
        for (path, signIn) in [("/", "/login"), ("/jobs", "/login?next=%2Fjobs"), ("/alerts", "/login?next=%2Falerts"),
                               ("/audit", "/login?next=%2Faudit")] {
            let page = try await session.get(path)
            XCTAssertEqual(page.status, 303, path)
            XCTAssertEqual(page.header("Location"), signIn, "the sign-in remembers where \(path) was going")
        }
        let credit = try await session.post("/alerts/\(harness.fixture.paidNotCreditedAlert)/credit", [("order_id", "order-alice-1")])
        XCTAssertEqual(credit.status, 303)
        let open: Int = try await harness.scalar("SELECT count(*) FROM iap.alerts WHERE state = 'open'")
        XCTAssertEqual(open, 3)
        await session.close()
        await harness.close()
    }

    func testFailedSignInsAreAuditedAndRateLimitedPerUser() async throws {
        let harness = try await ConsoleHarness()
        let session = try ConsoleSession(baseURL: harness.baseURL)
        for _ in 0..<5 {
            let wrong = try await session.signIn("sam", password: "guess")
            XCTAssertEqual(wrong.status, 401)
        }
        let limited = try await session.signIn("sam", password: ConsoleHarness.password)
        XCTAssertEqual(limited.status, 429, "past the free attempts even the right password waits out the back-off delay")
        let unknown = try await session.signIn("nobody", password: "x")
        XCTAssertEqual(unknown.status, 401)
        let failures: Int = try await harness.scalar("SELECT count(*) FROM iap.audit_log WHERE action = 'login_failed' AND actor = 'sam'")
        XCTAssertEqual(failures, 6)
        XCTAssertTrue(harness.logs.lines.contains { $0.contains("event=console_audit") && $0.contains("action=login_failed") })
        let viewer = try await session.signIn("vera", password: ConsoleHarness.password)
        XCTAssertEqual(viewer.status, 303, "another user from the same address is still let in")
        await session.close()
        await harness.close()
    }

    func testFormsWithAMissingOrStaleCSRFTokenAreRefused() async throws {
        let harness = try await ConsoleHarness()
        let session = try ConsoleSession(baseURL: harness.baseURL)
        _ = try await session.signIn("sam", password: ConsoleHarness.password)
        let stale = try await session.csrfToken()
        let alert = harness.fixture.alertToResolve
        let missing = try await session.post("/alerts/\(alert)/resolve", [("note", "no token")])
        XCTAssertEqual(missing.status, 403)
        XCTAssertTrue(missing.text.contains("CSRF"))
        let signOut = try await session.post("/logout", [("csrf", stale)])
        XCTAssertEqual(signOut.status, 303)
        _ = try await session.signIn("sam", password: ConsoleHarness.password)
        let old = try await session.post("/alerts/\(alert)/resolve", [("csrf", stale), ("note", "old token")])
        XCTAssertEqual(old.status, 403, "a token from an earlier session does not count")
        let login = try await session.post("/login", [("csrf", "forged"), ("user", "sam"), ("password", ConsoleHarness.password)])
        XCTAssertEqual(login.status, 403)
        let state: String = try await harness.scalar("SELECT state FROM iap.alerts WHERE id = $1", [alert])
        XCTAssertEqual(state, "open")
        await session.close()
        await harness.close()
    }

    func testAViewerReadsButCannotAct() async throws {
        let harness = try await ConsoleHarness()
        let session = try ConsoleSession(baseURL: harness.baseURL)
        _ = try await session.signIn("vera", password: ConsoleHarness.password)
        let alerts = try await session.get("/alerts")
        XCTAssertEqual(alerts.status, 200)
        XCTAssertFalse(alerts.text.contains("Credit to order"), "no action forms for a viewer")
        let token = try await session.csrfToken()
        let refused = try await session.post("/alerts/\(harness.fixture.paidNotCreditedAlert)/credit",
                                             [("csrf", token), ("order_id", "order-alice-1")])
        XCTAssertEqual(refused.status, 403)
        XCTAssertTrue(refused.text.contains("may read but not act"))
        let ledger: Int = try await harness.scalar("SELECT count(*) FROM iap.credits")
        XCTAssertEqual(ledger, 1)
        await session.close()
        await harness.close()
    }

    func testCreditGoesThroughTheExactlyOncePathAndIsAudited() async throws {
        let harness = try await ConsoleHarness()
        let session = try ConsoleSession(baseURL: harness.baseURL)
        _ = try await session.signIn("sam", password: ConsoleHarness.password)
        let token = try await session.csrfToken()
        let alert = harness.fixture.paidNotCreditedAlert
        // Post/redirect/get: a refusal comes back inline on the alerts page, the typed order id kept.
        let wrongOrder = try await session.post("/alerts/\(alert)/credit", [("csrf", token), ("order_id", "order-carl-1")])
        XCTAssertEqual(wrongOrder.status, 303)
        let refusedPage = try await session.get(try XCTUnwrap(wrongOrder.header("Location")))
        XCTAssertTrue(refusedPage.text.contains("belongs to another user"), refusedPage.text)
        XCTAssertTrue(refusedPage.text.contains("value=\"order-carl-1\""), "the typed order id is kept")
        let credited = try await session.post("/alerts/\(alert)/credit", [("csrf", token), ("order_id", "order-alice-1")])
        XCTAssertEqual(credited.status, 303)
        let location = try XCTUnwrap(credited.header("Location"))
        XCTAssertTrue(location.hasPrefix("/alerts?flash=") && location.hasSuffix("#outcome"), location)
        let page1 = try await session.get(location)
        XCTAssertTrue(page1.text.contains("credited to order order-alice-1 and resolved"))
        let again = try await session.post("/alerts/\(alert)/credit", [("csrf", token), ("order_id", "order-alice-1")])
        let againPage = try await session.get(try XCTUnwrap(again.header("Location")))
        XCTAssertTrue(againPage.text.contains("already resolved"), "the alert is resolved: nothing is credited twice")
        let by: String = try await harness.scalar("SELECT credited_by FROM iap.credits WHERE transaction_id = '2000000000000001'")
        XCTAssertEqual(by, "sam", "the ledger names the person, not the role")
        let rows: Int = try await harness.scalar("SELECT count(*) FROM iap.credits WHERE transaction_id = '2000000000000001'")
        XCTAssertEqual(rows, 1)
        let audited: Int = try await harness.scalar(
            "SELECT count(*) FROM iap.audit_log WHERE actor = 'sam' AND action = 'credit' AND target = $1", ["alert:\(alert)"])
        XCTAssertEqual(audited, 3, "both refused attempts and the credit")
        let audit = try await session.get("/audit")
        XCTAssertTrue(audit.text.contains("alert:\(alert)"))
        await session.close()
        await harness.close()
    }

    func testBadInputGetsAClearClientError() async throws {
        let harness = try await ConsoleHarness()
        let session = try ConsoleSession(baseURL: harness.baseURL)
        _ = try await session.signIn("sam", password: ConsoleHarness.password)
        for (path, status) in [("/jobs?state=bogus", 400), ("/jobs?before=-4", 400), ("/jobs/abc", 400), ("/jobs/99999999", 404),
                               ("/users", 400), ("/alerts?open_before=x", 400), ("/nowhere", 404),
                               ("/audit?before=0", 400)] {
            let page = try await session.get(path)
            XCTAssertEqual(page.status, status, path)
        }
        XCTAssertNil(FormFields("q=%ZZ"), "bad percent escapes are refused, not guessed at")
        let token = try await session.csrfToken()
        // Forms answer with a redirect; the refusal is shown on the page they came from.
        let empty = try await session.post("/alerts/\(harness.fixture.alertToResolve)/resolve", [("csrf", token), ("note", "  ")])
        XCTAssertEqual(empty.status, 303)
        let page2 = try await session.get(try XCTUnwrap(empty.header("Location")))
        XCTAssertTrue(page2.text.contains("A note is required."))
        let missing = try await session.post("/alerts/987654/resolve", [("csrf", token), ("note", "x")])
        let page3 = try await session.get(try XCTUnwrap(missing.header("Location")))
        XCTAssertTrue(page3.text.contains("there is no alert #987654"))
        let lookup = try await session.post("/lookup", [("csrf", token), ("apple_order_id", "MK5TTTVWJH")])
        let lookupPage = try await session.get(try XCTUnwrap(lookup.header("Location")))
        XCTAssertTrue(lookupPage.text.contains("Lookup unavailable"), "no lookup configured")
        await session.close()
        await harness.close()
    }

    func testTrustedHeaderSignsInOnlyFromTheTrustedProxy() async throws {
        let trusted = try ConsoleConfiguration(listen: "127.0.0.1:0", trustedHeader: "X-Forwarded-Email", trustedProxies: ["127.0.0.1"])
        let harness = try await ConsoleHarness(configuration: trusted)
        let session = try ConsoleSession(baseURL: harness.baseURL)
        session.extraHeaders = [("X-Forwarded-Email", "sam")]
        let page = try await session.get("/alerts")
        XCTAssertEqual(page.status, 200)
        XCTAssertTrue(page.text.contains("sam · support"))
        let token = try await session.csrfToken()
        let resolved = try await session.post("/alerts/\(harness.fixture.alertToResolve)/resolve", [("csrf", token), ("note", "refunded by Apple"), ("confirm_no_credit", "yes")])
        XCTAssertEqual(resolved.status, 303)
        let login = try await session.get("/login")
        XCTAssertEqual(login.status, 303, "no password form in SSO mode")
        session.extraHeaders = [("X-Forwarded-Email", "mallory")]
        let stranger = try await session.get("/")
        XCTAssertEqual(stranger.status, 403)
        let ssoLogins: Int = try await harness.scalar("SELECT count(*) FROM iap.audit_log WHERE action = 'login' AND details->>'method' = 'sso'")
        XCTAssertEqual(ssoLogins, 1)
        await session.close()
        await harness.close()

        let elsewhere = try ConsoleConfiguration(listen: "127.0.0.1:0", trustedHeader: "X-Forwarded-Email", trustedProxies: ["10.9.9.9"])
        let untrusted = try await ConsoleHarness(configuration: elsewhere)
        let direct = try ConsoleSession(baseURL: untrusted.baseURL)
        direct.extraHeaders = [("X-Forwarded-Email", "sam")]
        let refused = try await direct.get("/")
        XCTAssertEqual(refused.status, 403, "the header counts only from the proxy")
        await direct.close()
        await untrusted.close()
    }

    func testMetricsCountRequestsByPageAndStatus() async throws {
        let harness = try await ConsoleHarness()
        let session = try ConsoleSession(baseURL: harness.baseURL)
        _ = try await session.signIn("sam", password: ConsoleHarness.password)
        _ = try await session.get("/")
        _ = try await session.get("/jobs/abc")
        _ = try await session.get("/no/such/page")
        let metrics = try await session.get("/metrics")
        XCTAssertEqual(metrics.status, 200)
        let families = try StrictPrometheusParser.parse(metrics.text)
        XCTAssertEqual(families.first { $0.name == "iap_console_requests_total" }?.type, "counter")
        XCTAssertEqual(families.first { $0.name == "iap_console_request_duration_seconds" }?.type, "histogram")
        XCTAssertTrue(metrics.text.contains(#"iap_console_requests_total{page="overview",status="200"} 1"#), metrics.text)
        XCTAssertTrue(metrics.text.contains(#"iap_console_requests_total{page="job",status="400"} 1"#))
        XCTAssertTrue(metrics.text.contains(#"iap_console_requests_total{page="unmatched",status="404"} 1"#))
        await session.close()
        await harness.close()
    }

    func testAppleOrderLookupAndItsCreditAreAudited() async throws {
        let lookup = FakeOrderLookup()
        let harness = try await ConsoleHarness(lookup: lookup)
        let session = try ConsoleSession(baseURL: harness.baseURL)
        _ = try await session.signIn("sam", password: ConsoleHarness.password)
        let token = try await session.csrfToken()
        let bad = try await session.post("/lookup", [("csrf", token), ("apple_order_id", "MK5<script>")])
        XCTAssertEqual(bad.status, 303)
        let badPage = try await session.get(try XCTUnwrap(bad.header("Location"))).text
        XCTAssertTrue(badPage.contains("holds only letters and digits") && badPage.contains("value=\"MK5&lt;script&gt;\""), badPage)
        let found = try await session.post("/lookup", [("csrf", token), ("apple_order_id", "MK5TTTVWJH")])
        XCTAssertEqual(found.status, 303, "post/redirect/get: Back never asks to resubmit")
        let foundPage = try await session.get(try XCTUnwrap(found.header("Location")))
        XCTAssertTrue(foundPage.text.contains("2000000000000099") && foundPage.text.contains("action=\"/lookup/credit\""))
        let credited = try await session.post("/lookup/credit", [("csrf", token), ("apple_order_id", "MK5TTTVWJH"),
                                                                 ("transaction_id", "2000000000000099"), ("user_id", "alice"),
                                                                 ("order_id", "order-alice-1")])
        XCTAssertEqual(credited.status, 303)
        let page4 = try await session.get(try XCTUnwrap(credited.header("Location")))
        XCTAssertTrue(page4.text
            .contains("credited 2000000000000099 to order order-alice-1"))
        XCTAssertEqual(lookup.credits.withLock { $0 }, ["2000000000000099"])
        let actions: [String] = try await harness.client.query("SELECT action FROM iap.audit_log WHERE actor = 'sam' ORDER BY id")
            .map { try $0.decode(String.self, at: 0) }
        XCTAssertEqual(actions, ["login", "lookup", "lookup_credit"])
        await session.close()
        await harness.close()
    }
}

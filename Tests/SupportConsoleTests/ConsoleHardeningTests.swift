import Foundation
import HTTP
import Observability
import Postgres
import SupportConsole
import TestSupport
import XCTest

/// OWASP ASVS checks of the console: the audit trail, cookies and transport, requests from elsewhere.
final class ConsoleHardeningTests: XCTestCase {
    // MARK: audit trail

    func testTheAuditLogIsAppendOnly() async throws {
        let harness = try await ConsoleHarness()
        let session = try ConsoleSession(baseURL: harness.baseURL)
        _ = try await session.signIn("sam", password: ConsoleHarness.password)
        for sql in ["UPDATE iap.audit_log SET actor = 'nobody'", "DELETE FROM iap.audit_log", "TRUNCATE iap.audit_log"] {
            do {
                _ = try await harness.client.query(sql)
                XCTFail("\(sql) was allowed")
            } catch {
                XCTAssertTrue("\(error)".contains("append-only"), "\(sql): \(error)")
            }
        }
        let kept: Int = try await harness.scalar("SELECT count(*) FROM iap.audit_log WHERE actor = 'sam' AND action = 'login'")
        XCTAssertEqual(kept, 1)
        await session.close()
        await harness.close()
    }

    func testACreditWhoseAuditRowFailsIsNotMade() async throws {
        let harness = try await ConsoleHarness()
        let session = try ConsoleSession(baseURL: harness.baseURL)
        _ = try await session.signIn("sam", password: ConsoleHarness.password)
        // A trigger in the public schema, so every pooled connection sees it.
        _ = try await harness.client.query("""
            CREATE FUNCTION public.refuse_credit_audit() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION 'audit insert failed (test)'; END $$
            """)
        _ = try await harness.client.query("""
            CREATE TRIGGER refuse_credit_audit BEFORE INSERT ON iap.audit_log FOR EACH ROW
            WHEN (NEW.action = 'credit') EXECUTE FUNCTION public.refuse_credit_audit()
            """)
        let token = try await session.csrfToken()
        let alert = harness.fixture.paidNotCreditedAlert
        let credit = try await session.post("/alerts/\(alert)/credit", [("csrf", token), ("order_id", "order-alice-1")])
        XCTAssertEqual(credit.status, 503)
        let credits: Int = try await harness.scalar("SELECT count(*) FROM iap.credits WHERE transaction_id = '2000000000000001'")
        XCTAssertEqual(credits, 0, "no money moved by nobody")
        let state: String = try await harness.scalar("SELECT state FROM iap.alerts WHERE id = $1", [alert])
        XCTAssertEqual(state, "open")
        await session.close()
        await harness.close()
    }

    func testTheLedgerAndTheAlertNameThePersonWhoCredited() async throws {
        let harness = try await ConsoleHarness()
        let session = try ConsoleSession(baseURL: harness.baseURL)
        _ = try await session.signIn("sam", password: ConsoleHarness.password)
        let token = try await session.csrfToken()
        let alert = harness.fixture.paidNotCreditedAlert
        let credit = try await session.post("/alerts/\(alert)/credit", [("csrf", token), ("order_id", "order-alice-1")])
        XCTAssertEqual(credit.status, 303)
        let by: String = try await harness.scalar("SELECT credited_by FROM iap.credits WHERE transaction_id = '2000000000000001'")
        XCTAssertEqual(by, "sam")
        let resolution: String = try await harness.scalar("SELECT resolution FROM iap.alerts WHERE id = $1", [alert])
        XCTAssertTrue(resolution.contains("by sam"), resolution)
        await session.close()
        await harness.close()
    }

    // MARK: cookies and transport

    func testCookiesAreSecureAndHostPrefixedByDefaultWithHSTS() async throws {
        let harness = try await ConsoleHarness()
        let session = try ConsoleSession(baseURL: harness.baseURL)
        let form = try await session.get("/login")
        let loginCookie = try XCTUnwrap(form.headers.first { $0.name == "Set-Cookie" }?.value)
        XCTAssertTrue(loginCookie.hasPrefix("__Host-") && loginCookie.contains("; Secure") && loginCookie.contains("Path=/;"), loginCookie)
        let signIn = try await session.signIn("sam", password: ConsoleHarness.password)
        XCTAssertEqual(signIn.status, 303)
        let cookie = try XCTUnwrap(signIn.headers.first { $0.name == "Set-Cookie" && $0.value.hasPrefix("__Host-rw_console_session=") }?.value)
        XCTAssertTrue(cookie.contains("; Secure") && cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), cookie)
        let page = try await session.get("/")
        XCTAssertEqual(page.status, 200)
        XCTAssertEqual(page.header("Strict-Transport-Security"), "max-age=31536000")
        await session.close()
        await harness.close()
    }

    func testInsecureCookiesAreAnExplicitDevelopmentSetting() async throws {
        let harness = try await ConsoleHarness(configuration: try ConsoleConfiguration(listen: "127.0.0.1:0", insecureCookies: true))
        let session = try ConsoleSession(baseURL: harness.baseURL)
        let signIn = try await session.signIn("sam", password: ConsoleHarness.password)
        let cookie = try XCTUnwrap(signIn.headers.first { $0.name == "Set-Cookie" && $0.value.hasPrefix("rw_console_session=") }?.value)
        XCTAssertFalse(cookie.contains("Secure"), cookie)
        let page = try await session.get("/")
        XCTAssertEqual(page.status, 200)
        XCTAssertNil(page.header("Strict-Transport-Security"))
        await session.close()
        await harness.close()
    }

    // MARK: requests from elsewhere

    func testAForeignHostHeaderIsRefused() async throws {
        let harness = try await ConsoleHarness()
        let session = try ConsoleSession(baseURL: harness.baseURL)
        session.extraHeaders = [("Host", "rebind.attacker.example:\(harness.port)")]
        let page = try await session.get("/login")
        XCTAssertEqual(page.status, 421, "DNS rebinding: a name that points at our loopback is not our name")
        session.extraHeaders = [("Host", "localhost:\(harness.port)")]
        let local = try await session.get("/login")
        XCTAssertEqual(local.status, 200)
        await session.close()
        await harness.close()

        let proxied = try await ConsoleHarness(configuration: try ConsoleConfiguration(listen: "127.0.0.1:0",
                                                                                       allowedHosts: ["support.example.com"]))
        let named = try ConsoleSession(baseURL: proxied.baseURL)
        named.extraHeaders = [("Host", "Support.Example.com")]
        let allowed = try await named.get("/login")
        XCTAssertEqual(allowed.status, 200, "a name in CONSOLE_ALLOWED_HOSTS is ours")
        await named.close()
        await proxied.close()
    }

    func testACrossSiteFormIsRefusedEvenWithAValidToken() async throws {
        let harness = try await ConsoleHarness()
        let session = try ConsoleSession(baseURL: harness.baseURL)
        _ = try await session.signIn("sam", password: ConsoleHarness.password)
        let token = try await session.csrfToken()
        let alert = harness.fixture.alertToResolve
        session.extraHeaders = [("Origin", "https://attacker.example")]
        let foreign = try await session.post("/alerts/\(alert)/resolve", [("csrf", token), ("note", "forged")])
        XCTAssertEqual(foreign.status, 403)
        session.extraHeaders = [("Sec-Fetch-Site", "cross-site")]
        let crossSite = try await session.post("/alerts/\(alert)/resolve", [("csrf", token), ("note", "forged")])
        XCTAssertEqual(crossSite.status, 403)
        let state: String = try await harness.scalar("SELECT state FROM iap.alerts WHERE id = $1", [alert])
        XCTAssertEqual(state, "open")
        session.extraHeaders = [("Origin", harness.baseURL), ("Sec-Fetch-Site", "same-origin")]
        let ours = try await session.post("/alerts/\(alert)/resolve", [("csrf", token), ("note", "done")])
        XCTAssertEqual(ours.status, 303)
        await session.close()
        await harness.close()
    }

    func testTheRoleIsCheckedOnEveryRequestNotOnlyPosts() async throws {
        let harness = try await ConsoleHarness()
        let session = try ConsoleSession(baseURL: harness.baseURL)
        _ = try await session.signIn("vera", password: ConsoleHarness.password)
        let lookup = try await session.get("/lookup")
        XCTAssertEqual(lookup.status, 403, "the lookup page is an action (it calls Apple): support only")
        await session.close()
        await harness.close()
    }

    func testMigration0017RunsAgainOnALiveDatabase() async throws {
        let harness = try await ConsoleHarness()
        let session = try ConsoleSession(baseURL: harness.baseURL)
        _ = try await session.signIn("sam", password: ConsoleHarness.password)
        let script = try String(contentsOf: TestDatabase.migrationsDirectory.appendingPathComponent("0017_console_hardening.sql"), encoding: .utf8)
        let connection = try await PostgresConnection.connect(harness.url)
        try await connection.execute(script: script)
        try await connection.execute(script: script)
        await connection.close()
        let page = try await session.get("/")
        XCTAssertEqual(page.status, 200, "the session survives the rerun")
        do {
            _ = try await harness.client.query("DELETE FROM iap.audit_log")
            XCTFail("the rerun dropped the append-only trigger")
        } catch {}
        await session.close()
        await harness.close()
    }
}

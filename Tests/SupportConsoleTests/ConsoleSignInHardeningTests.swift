import Foundation
import HTTP
import Observability
import Postgres
import SupportConsole
import Synchronization
import TestSupport
import XCTest

/// OWASP ASVS checks of signing in: the throttle, client addresses, users and passwords.
final class ConsoleSignInHardeningTests: XCTestCase {
    // MARK: sign-in throttle

    func testOneHundredParallelWrongSignInsReachTheHasherOnlyAsOftenAsAllowed() async throws {
        let harness = try await ConsoleHarness()
        let session = try ConsoleSession(baseURL: harness.baseURL)
        let form = try await session.get("/login")
        let token = try XCTUnwrap(ConsoleSession.hiddenField("csrf", in: form.text))
        let cookies = session.cookies.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for attempt in 0..<100 {
                group.addTask {
                    let body = "csrf=\(token)&user=sam&password=guess\(attempt)"
                    let request = HTTPClientRequest(method: "POST", url: URL(string: harness.baseURL + "/login")!,
                                                    headers: [("Cookie", cookies), ("Content-Type", "application/x-www-form-urlencoded")],
                                                    body: Array(body.utf8))
                    return try await session.transport.send(request, timeout: .seconds(120)).status
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        XCTAssertEqual(statuses.filter { $0 == 401 }.count, 5, "five guesses per user, not a hundred")
        XCTAssertEqual(statuses.filter { $0 == 429 }.count, 95)
        let checked: Int = try await harness.scalar(
            "SELECT count(*) FROM iap.audit_log WHERE action = 'login_failed' AND details->>'reason' = 'wrong user or password'")
        XCTAssertEqual(checked, 5)
        await session.close()
        await harness.close()
    }

    func testFailuresAreSharedByEveryConsoleProcess() async throws {
        let harness = try await ConsoleHarness()
        let second = ConsoleServer(configuration: try ConsoleConfiguration(listen: "127.0.0.1:0"), client: harness.client,
                                   registry: MetricsRegistry(), logger: Logger(minimumLevel: .error, sink: harness.logs))
        let secondPort = try second.start()
        let first = try ConsoleSession(baseURL: harness.baseURL)
        for _ in 0..<5 { _ = try await first.signIn("sam", password: "guess") }
        let other = try ConsoleSession(baseURL: "http://127.0.0.1:\(secondPort)")
        let refused = try await other.signIn("sam", password: "another guess")
        XCTAssertEqual(refused.status, 429, "the second console knows of the first one's failures")
        await first.close()
        await other.close()
        await second.shutdown(grace: .seconds(1))
        await harness.close()
    }

    /// The proxy is trusted through a range, as an Ingress controller's pods are.
    func testForwardedForCountsOnlyFromATrustedProxy() async throws {
        let harness = try await ConsoleHarness(configuration: try ConsoleConfiguration(listen: "127.0.0.1:0", trustedProxies: ["127.0.0.0/8"]))
        let session = try ConsoleSession(baseURL: harness.baseURL)
        // Behind the proxy, one client's guesses at many names do not lock out the next client.
        session.extraHeaders = [("X-Forwarded-For", "203.0.113.7")]
        for index in 0..<20 { _ = try await session.signIn("guess\(index)", password: "guess") }
        let limited = try await session.signIn("vera", password: ConsoleHarness.password)
        XCTAssertEqual(limited.status, 429)
        session.extraHeaders = [("X-Forwarded-For", "203.0.113.7, 198.51.100.2")]
        let colleague = try await session.signIn("vera", password: ConsoleHarness.password)
        XCTAssertEqual(colleague.status, 303, "another client behind the same proxy is let in")
        let address: String = try await harness.scalar(
            "SELECT details->>'address' FROM iap.audit_log WHERE action = 'login' ORDER BY id DESC LIMIT 1")
        XCTAssertEqual(address, "198.51.100.2")
        await session.close()
        await harness.close()

        let direct = try await ConsoleHarness()
        let spoofer = try ConsoleSession(baseURL: direct.baseURL)
        spoofer.extraHeaders = [("X-Forwarded-For", "198.51.100.99")]
        _ = try await spoofer.signIn("vera", password: ConsoleHarness.password)
        let spoofed: String = try await direct.scalar(
            "SELECT details->>'address' FROM iap.audit_log WHERE action = 'login' ORDER BY id DESC LIMIT 1")
        XCTAssertEqual(spoofed, "127.0.0.1", "without a trusted proxy the header is not believed")
        await spoofer.close()
        await direct.close()
    }

    // MARK: users and passwords

    func testPasswordsNeedTwelveCharacters() async throws {
        let harness = try await ConsoleHarness()
        let users = ConsoleUsers(client: harness.client, hasher: ConsoleHarness.testHasher)
        do {
            try await users.add(name: "short", role: .viewer, password: "elevenchars")
            XCTFail("an 11-character password was accepted")
        } catch let error as ConsoleUserError {
            XCTAssertTrue(error.description.contains("12"), error.description)
        }
        await harness.close()
    }

    func testAddingAnExistingUserDoesNotSilentlyChangeTheirRole() async throws {
        let harness = try await ConsoleHarness()
        let users = ConsoleUsers(client: harness.client, hasher: ConsoleHarness.testHasher)
        do {
            try await users.add(name: "vera", role: .support, password: ConsoleHarness.password)
            XCTFail("add changed an existing user")
        } catch let error as ConsoleUserError {
            XCTAssertTrue(error.description.contains("already"), error.description)
        }
        let role: String = try await harness.scalar("SELECT role FROM iap.console_users WHERE name = 'vera'")
        XCTAssertEqual(role, "viewer")
        await harness.close()
    }

    func testPastTheFreeAttemptsSignInWaitsABackOffNotALockout() async throws {
        let limits = LoginThrottle.Limits(perUser: 3, baseDelaySeconds: 0.5, maxDelaySeconds: 1)
        let harness = try await ConsoleHarness(configuration: try ConsoleConfiguration(listen: "127.0.0.1:0", throttle: limits))
        let session = try ConsoleSession(baseURL: harness.baseURL)
        for _ in 0..<3 { _ = try await session.signIn("sam", password: "a wrong guess") }
        let waiting = try await session.signIn("sam", password: ConsoleHarness.password)
        XCTAssertEqual(waiting.status, 429)
        XCTAssertEqual(waiting.header("Retry-After"), "1")
        try await Task.sleep(for: .milliseconds(600))
        _ = try await session.signIn("sam", password: "another wrong guess")  // the 4th try: the delay doubles, capped at 1 s
        let refused = try await session.signIn("sam", password: ConsoleHarness.password)
        XCTAssertEqual(refused.status, 429)
        try await Task.sleep(for: .milliseconds(1100))
        let signedIn = try await session.signIn("sam", password: ConsoleHarness.password)
        XCTAssertEqual(signedIn.status, 303, "the owner gets in once the capped delay has passed")
        let attempts: Int = try await harness.scalar("SELECT count(*) FROM iap.console_login_attempts WHERE key = 'user:sam'")
        XCTAssertEqual(attempts, 0, "a right password starts the count again")
        await session.close()
        await harness.close()
    }

    // MARK: sessions

    func testAPasswordChangeEndsTheOldSessions() async throws {
        let harness = try await ConsoleHarness()
        let session = try ConsoleSession(baseURL: harness.baseURL)
        _ = try await session.signIn("sam", password: ConsoleHarness.password)
        let status1 = try await session.get("/").status
        XCTAssertEqual(status1, 200)
        try await ConsoleUsers(client: harness.client, hasher: ConsoleHarness.testHasher)
            .setPassword(name: "sam", password: "a brand new passphrase")
        let after = try await session.get("/")
        XCTAssertEqual(after.status, 303)
        XCTAssertEqual(after.header("Location"), "/login")
        await session.close()
        await harness.close()
    }

    func testAnIdleSessionEnds() async throws {
        let harness = try await ConsoleHarness(configuration: try ConsoleConfiguration(listen: "127.0.0.1:0", idleSeconds: 60))
        let session = try ConsoleSession(baseURL: harness.baseURL)
        _ = try await session.signIn("sam", password: ConsoleHarness.password)
        let status2 = try await session.get("/").status
        XCTAssertEqual(status2, 200)
        _ = try await harness.client.query("UPDATE iap.console_sessions SET last_seen_at = now() - interval '59 seconds'")
        let status3 = try await session.get("/").status
        XCTAssertEqual(status3, 200, "a request keeps the session alive")
        _ = try await harness.client.query("UPDATE iap.console_sessions SET last_seen_at = now() - interval '61 seconds'")
        let status4 = try await session.get("/").status
        XCTAssertEqual(status4, 303, "61 s idle: signed out, though the absolute expiry is hours away")
        await session.close()
        await harness.close()
    }

    func testUsersAreListedDisabledAndTheirRoleChangedOnlyOnPurpose() async throws {
        let harness = try await ConsoleHarness()
        let users = ConsoleUsers(client: harness.client, hasher: ConsoleHarness.testHasher)
        let session = try ConsoleSession(baseURL: harness.baseURL)
        _ = try await session.signIn("vera", password: ConsoleHarness.password)
        try await users.disable(name: "vera")
        let status5 = try await session.get("/").status
        XCTAssertEqual(status5, 303, "a disabled user's session ends")
        let status6 = try await session.signIn("vera", password: ConsoleHarness.password).status
        XCTAssertEqual(status6, 401)
        let listed = try await users.list()
        XCTAssertEqual(listed.map(\.name), ["sam", "vera"])
        XCTAssertNotNil(listed[1].disabledAt)
        try await users.enable(name: "vera")
        try await users.setRole(name: "vera", role: .support)
        let role: String = try await harness.scalar("SELECT role FROM iap.console_users WHERE name = 'vera'")
        XCTAssertEqual(role, "support")
        do {
            try await users.disable(name: "nobody")
            XCTFail("disabled a user who does not exist")
        } catch let error as ConsoleUserError {
            XCTAssertEqual(error, .noSuchUser("nobody"))
        }
        await session.close()
        await harness.close()
    }

    func testACheaperOldHashIsReplacedAtSignIn() async throws {
        let harness = try await ConsoleHarness()
        let old: String = try await harness.scalar("SELECT password_hash FROM iap.console_users WHERE name = 'sam'")
        XCTAssertTrue(old.hasPrefix("scrypt$12$8$1$"))
        let stronger = PasswordHasher(logN: 12, r: 8, p: 3)
        XCTAssertTrue(stronger.isStronger(than: old))
        XCTAssertTrue(PasswordHasher.standard.isStronger(than: "scrypt$15$8$1$00$00"), "the cost was raised from N=2^15, p=1")
        let server = ConsoleServer(configuration: try ConsoleConfiguration(listen: "127.0.0.1:0", passwordHasher: stronger),
                                   client: harness.client, registry: MetricsRegistry(), logger: Logger(minimumLevel: .error, sink: harness.logs))
        let port = try server.start()
        let session = try ConsoleSession(baseURL: "http://127.0.0.1:\(port)")
        let status7 = try await session.signIn("sam", password: ConsoleHarness.password).status
        XCTAssertEqual(status7, 303)
        let new: String = try await harness.scalar("SELECT password_hash FROM iap.console_users WHERE name = 'sam'")
        XCTAssertTrue(new.hasPrefix("scrypt$12$8$3$"), new)
        let status8 = try await session.get("/").status
        XCTAssertEqual(status8, 200, "a rehash is not a password change: the session stays")
        await session.close()
        await server.shutdown(grace: .seconds(1))
        await harness.close()
    }

    func testScryptRunsOnTwoThreadsOfItsOwnAndABurstBeyondTheQueueIsTurnedAway() async throws {
        let hashing = PasswordHashing(threads: 2, maxWaiting: 8)
        final class Running: Sendable { let count = Mutex((now: 0, most: 0)) }
        let running = Running()
        let threads = try await withThrowingTaskGroup(of: UInt.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    try await hashing.run {
                        running.count.withLock { $0.now += 1; $0.most = max($0.most, $0.now) }
                        ConsoleHarness.testHasher.burnEquivalentWork("x")
                        Thread.sleep(forTimeInterval: 0.02)
                        running.count.withLock { $0.now -= 1 }
                        return UInt(pthread_self())  // pthread_t: which thread ran it
                    }
                }
            }
            return try await group.reduce(into: Set<UInt>()) { $0.insert($1) }
        }
        XCTAssertEqual(running.count.withLock { $0.most }, 2, "never more than two hashes at once")
        XCTAssertLessThanOrEqual(threads.count, 2, "the same two threads do every hash")
        let blocked = DispatchSemaphore(value: 0)
        let stuck = PasswordHashing(threads: 1, maxWaiting: 1)
        let first = Task { try await stuck.run { blocked.wait() } }
        try await Task.sleep(for: .milliseconds(100))
        let second = Task { try await stuck.run { } }
        try await Task.sleep(for: .milliseconds(100))
        do {
            try await stuck.run { }
            XCTFail("a third sign-in waited beyond the queue")
        } catch is PasswordHashingBusy {}
        blocked.signal()
        try await first.value
        try await second.value
    }
}

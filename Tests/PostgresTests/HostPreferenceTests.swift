import EmbeddedPostgres
import Foundation
@testable import Postgres
import Synchronization
import TestSupport
import XCTest

/// A pool remembers the host that last accepted a session and skips, for a while, one that
/// failed: a hung first host of a multi-host URL is paid for once, not on every reconnect.
final class HostPreferenceTests: XCTestCase {
    /// Two hosts in front of one server: `first` hangs (accepts TCP, never answers), `second` serves.
    private struct TwoHosts {
        let first: FaultProxy
        let second: FaultProxy
        let configuration: PostgresConfiguration
        let changes: Changes

        init(applicationName: String) async throws {
            let url = try await TestDatabase.fresh(migrated: false)
            let components = try XCTUnwrap(URLComponents(string: url))
            let target = (host: try XCTUnwrap(components.host), port: try XCTUnwrap(components.port))
            first = try FaultProxy(targetPort: target.port, targetHost: target.host)
            second = try FaultProxy(targetPort: target.port, targetHost: target.host)
            first.hang()
            let user = (components.percentEncodedUser ?? "postgres") + (components.percentEncodedPassword.map { ":" + $0 } ?? "")
            let query = [components.percentEncodedQuery, "target_session_attrs=read-write"].compactMap { $0 }.joined(separator: "&")
            var configuration = PostgresConfiguration(
                conninfo: "postgresql://\(user)@127.0.0.1:\(first.port),127.0.0.1:\(second.port)\(components.percentEncodedPath)?\(query)",
                applicationName: applicationName)
            configuration.connectTimeout = 1
            let changes = Changes()
            configuration.preferredHostHandler = { changes.append($0) }
            self.configuration = configuration
            self.changes = changes
        }

        func stop() {
            first.stop()
            second.stop()
        }
    }

    final class Changes: Sendable {
        private let list = Mutex<[PostgresPreferredHost]>([])
        func append(_ change: PostgresPreferredHost) { list.withLock { $0.append(change) } }
        var all: [PostgresPreferredHost] { list.withLock { $0 } }
    }

    func testAHungFirstHostIsTriedOnceNotByEverySessionOfThePool() async throws {
        let hosts = try await TwoHosts(applicationName: "hung-first-host")
        defer { hosts.stop() }
        let client = PostgresClient(configuration: hosts.configuration, maxConnections: 4)
        _ = try await client.query("SELECT 1")
        XCTAssertEqual(hosts.first.acceptedConnections, 1, "the first session met the hung host once")
        XCTAssertEqual(hosts.changes.all, [PostgresPreferredHost(host: "127.0.0.1:\(hosts.second.port)", previous: nil,
                                                                 coolingDown: ["127.0.0.1:\(hosts.first.port)"],
                                                                 applicationName: "hung-first-host")])

        for _ in 0..<3 {
            // Every slot of the pool at once, then every connection broken: the whole pool reconnects.
            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        try await client.withConnection { connection in
                            try await connection.query("SELECT count(*) FROM pg_sleep(0.2)")[0].decode(Int.self, at: 0)
                        }
                    }
                }
                for try await one in group { XCTAssertEqual(one, 1) }
            }
            hosts.second.resetConnections()
            _ = try await client.query("SELECT 1") // the lost connection is replaced, the idle ones retired
        }
        XCTAssertGreaterThanOrEqual(client.sessionsOpened, 8, "sessions were opened again and again")
        XCTAssertEqual(hosts.first.acceptedConnections, 1, "no new session went to the hung host again")
        await client.close()
    }

    func testAHostThatCameBackServesWhenThePreferredOneFails() async throws {
        let hosts = try await TwoHosts(applicationName: "host-came-back")
        defer { hosts.stop() }
        let client = PostgresClient(configuration: hosts.configuration, maxConnections: 2)
        _ = try await client.query("SELECT 1")
        XCTAssertEqual(hosts.first.acceptedConnections, 1)

        hosts.first.recover()
        hosts.second.stop() // gone: its open sessions reset, new ones not served
        let one = try await client.query("SELECT 1")[0].decode(Int.self, at: 0)
        XCTAssertEqual(one, 1, "the host still cooling down was tried once the preferred one failed")
        XCTAssertEqual(hosts.first.acceptedConnections, 2)
        XCTAssertEqual(hosts.changes.all.last, PostgresPreferredHost(host: "127.0.0.1:\(hosts.first.port)",
                                                                    previous: "127.0.0.1:\(hosts.second.port)",
                                                                    coolingDown: ["127.0.0.1:\(hosts.second.port)"],
                                                                    applicationName: "host-came-back"))
        _ = try await client.query("SELECT 1")
        XCTAssertEqual(hosts.first.acceptedConnections, 2, "the session that served is kept")
        await client.close()
    }

    func testTheOrderPutsTheLastHostThatAcceptedFirstAndAFailedOneLastForTheCoolDown() {
        let (a, b, c) = (host("a"), host("b"), host("c"))
        let hosts = [a, b, c]
        let second: UInt64 = 1_000_000_000
        let preference = HostPreference(coolDown: 10)
        XCTAssertEqual(preference.order(hosts, now: 0), [a, b, c], "the list's order to begin with")

        preference.failed(a, now: 0)
        preference.accepted(b, among: hosts, now: 1 * second)
        XCTAssertEqual(preference.order(hosts, now: 2 * second), [b, c, a], "a timed out: last, still on the list")
        XCTAssertEqual(preference.order(hosts, now: 11 * second), [b, a, c], "its cool-down is over: back in the list's order")

        preference.failed(b, now: 12 * second)
        XCTAssertEqual(preference.order(hosts, now: 13 * second), [a, c, b], "the preferred host failed: last for its cool-down")
        XCTAssertEqual(preference.order(hosts, now: 23 * second), [b, a, c], "and first again after it, if no other host accepted meanwhile")
        preference.failed(a, now: 13 * second)
        preference.failed(c, now: 13 * second)
        XCTAssertEqual(preference.order(hosts, now: 14 * second), [a, b, c], "every host cooling down: all still tried, in the list's order")

        preference.accepted(c, among: hosts, now: 15 * second)
        XCTAssertEqual(preference.order(hosts, now: 15 * second), [c, a, b], "the host that accepted goes first, cooling or not")
        XCTAssertEqual(HostPreference.coolDown(connectTimeout: 10), 30)
        XCTAssertEqual(HostPreference.coolDown(connectTimeout: .infinity), 300)
    }

    private func host(_ name: String) -> ConnectTargets.Host { .init(host: name, hostaddr: "", port: "5432") }
}

/// Name lookups: one per name at a time, a few threads at most, and a caller never waits past its deadline.
final class HostLookupTests: XCTestCase {
    /// A resolver that blocks until opened, and counts its calls and how many run at once.
    final class GatedResolver: Sendable {
        private struct Counts { var calls = 0, running = 0, peak = 0 }
        private let counts = Mutex(Counts())
        private let gate = DispatchSemaphore(value: 0)
        private let opened = Atomic<Bool>(false)

        var calls: Int { counts.withLock { $0.calls } }
        var running: Int { counts.withLock { $0.running } }
        var peak: Int { counts.withLock { $0.peak } }

        func open() {
            opened.store(true, ordering: .sequentiallyConsistent)
            for _ in 0..<64 { gate.signal() }
        }

        func resolve(_ name: String) -> HostLookup.Answer {
            counts.withLock {
                $0.calls += 1
                $0.running += 1
                $0.peak = max($0.peak, $0.running)
            }
            if !opened.load(ordering: .sequentiallyConsistent) { gate.wait() }
            counts.withLock { $0.running -= 1 }
            return .success(["10.0.0.\(name.count)"])
        }
    }

    /// Runs `body` on `count` threads of their own (callers block) and returns their results in order.
    private func onThreads<T: Sendable>(_ count: Int, _ body: @escaping @Sendable (Int) -> T) -> () -> [T] {
        let results = Mutex<[Int: T]>([:])
        let group = DispatchGroup()
        for index in 0..<count {
            group.enter()
            Thread {
                let value = body(index)
                results.withLock { $0[index] = value }
                group.leave()
            }.start()
        }
        return {
            group.wait()
            return results.withLock { all in (0..<count).compactMap { all[$0] } }
        }
    }

    private func waitUntil(_ condition: () -> Bool) {
        let deadline = Date().addingTimeInterval(30)
        while !condition(), Date() < deadline { usleep(10_000) }
    }

    func testConcurrentLookupsOfOneNameShareOneLookup() {
        let resolver = GatedResolver()
        let lookup = HostLookup(threadLimit: 4, resolve: resolver.resolve)
        let answers = onThreads(5) { _ in try? lookup.addresses(of: "db.example", until: Deadline(secondsFromNow: 60)) }
        waitUntil { lookup.callersWaiting(for: "db.example") == 5 }
        XCTAssertEqual(lookup.callersWaiting(for: "db.example"), 5, "every caller waits for the one lookup")
        resolver.open()
        XCTAssertEqual(answers(), Array(repeating: ["10.0.0.10"], count: 5))
        XCTAssertEqual(resolver.calls, 1, "one lookup answered all five")
        XCTAssertEqual(lookup.callersWaiting(for: "db.example"), 0)

        XCTAssertEqual(try lookup.addresses(of: "db.example", until: Deadline(secondsFromNow: 60)), ["10.0.0.10"])
        XCTAssertEqual(resolver.calls, 2, "an answer is not kept: the next caller asks afresh")
    }

    func testAtMostTheLimitOfLookupsRunAndADeadlineEndsTheWait() {
        let resolver = GatedResolver()
        let lookup = HostLookup(threadLimit: 2, resolve: resolver.resolve)
        let outcomes = onThreads(6) { index -> String in
            do {
                _ = try lookup.addresses(of: "host-\(index).example", until: Deadline(secondsFromNow: 0.5))
                return "resolved"
            } catch let error as PostgresError {
                return error.isTimeout ? "timed out" : "\(error)"
            } catch {
                return "\(error)"
            }
        }
        XCTAssertEqual(outcomes(), Array(repeating: "timed out", count: 6), "every caller stopped waiting at its deadline")
        XCTAssertEqual(resolver.peak, 2, "no more lookups ran at once than the limit")
        XCTAssertEqual(resolver.running, 2, "the two lookups are still blocked, left alone")

        resolver.open()
        waitUntil { resolver.running == 0 }
        XCTAssertEqual(resolver.calls, 2, "the names queued behind them were not looked up: nobody waited any more")
        XCTAssertEqual(try lookup.addresses(of: "db.example", until: Deadline(secondsFromNow: 60)), ["10.0.0.10"],
                       "the threads are free again")
    }
}

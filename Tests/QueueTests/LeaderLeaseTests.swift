import EmbeddedPostgres
import Foundation
import Observability
import Postgres
import Queue
import Synchronization
import TestSupport
import XCTest

/// Leadership that cannot be starved, and duties that stop with the lease.
final class LeaderLeaseTests: XCTestCase {
    private func events(_ logs: CapturingLogSink, _ event: String) -> [String] {
        logs.lines.filter { $0.contains("event=\(event) ") || $0.hasSuffix("event=\(event)") }
    }

    private func leaseClient(_ url: String, ttl: Double, name: String) -> PostgresClient {
        LeaderLeaseStore.dedicatedClient(PostgresConfiguration(conninfo: url, applicationName: name), ttl: ttl)
    }

    private func holder(_ client: PostgresClient) async throws -> String? {
        try await LeaderLeaseStore(client: client).holder(name: Maintenance.leaseName)
    }

    func testATermEndsWithItsLease() async throws {
        let term = LeaderTerm.held(until: .now + .milliseconds(150))
        XCTAssertTrue(term.isHeld)
        XCTAssertNoThrow(try term.check())
        try await Task.sleep(for: .milliseconds(200))
        XCTAssertFalse(term.isHeld)
        XCTAssertNil(term.expires)
        XCTAssertThrowsError(try term.check()) { XCTAssertTrue($0 is LeaseEnded) }
    }

    /// The pool is saturated (every connection busy, a long queue of waiters, as under full load
    /// with slow completions); the lease is renewed on its own session, so over four TTLs one
    /// process keeps the lease and neither flaps.
    func testLeaderDoesNotFlapWhileThePoolIsSaturated() async throws {
        let url = try await TestDatabase.fresh()
        let ttl = 1.5
        let pool = PostgresClient(conninfo: url, maxConnections: 2, applicationName: "saturated-pool")
        let observer = PostgresClient(conninfo: url, maxConnections: 1, applicationName: "observer")
        let busy = Counter()
        let load = (0..<16).map { _ in
            Task {
                while busy.value.load(ordering: .relaxed) == 0 { _ = try? await pool.query("SELECT pg_sleep(0.4)") }
            }
        }
        // A duty that itself goes through the saturated pool: slow, but no threat to the lease.
        struct PoolDuty: MaintenanceTask {
            let name = "pool_duty"
            let interval = 0.1
            let pool: PostgresClient
            func run(term: LeaderTerm) async throws { _ = try await pool.query("SELECT 1") }
        }
        let logs = CapturingLogSink()
        let contenders = ["first", "second"].map { id in
            Maintenance(client: leaseClient(url, ttl: ttl, name: "lease-\(id)"), leaderID: id, tasks: [PoolDuty(pool: pool)],
                        logger: Logger(minimumLevel: .debug, sink: logs).with(["worker": .string(id)]), ttl: ttl, dutyInterval: 0.1)
        }
        try await Task.sleep(for: .milliseconds(500))  // the pool's queue is long before anyone is elected
        let started = ContinuousClock.now
        let pooledSelect = try await pool.query("SELECT 1")
        let queuedFor = ContinuousClock.now - started
        XCTAssertEqual(pooledSelect.count, 1)
        XCTAssertGreaterThan(queuedFor, .seconds(ttl), "the pool is saturated: a renewal through it would miss its lease")

        let runs = contenders.map { contender in Task { await contender.run() } }
        let elected = try await eventually(10) { try await holder(observer) != nil }
        XCTAssertTrue(elected)
        let first = try await holder(observer)
        var holders: Set<String?> = []
        var samplesWithoutOneLeader = 0
        let until = ContinuousClock.now + .seconds(ttl * 4)
        while ContinuousClock.now < until {
            holders.insert(try await holder(observer))
            if contenders.filter(\.isLeader).count != 1 { samplesWithoutOneLeader += 1 }
            try await Task.sleep(for: .milliseconds(100))
        }
        XCTAssertEqual(holders, [first], "the lease never changed hands")
        XCTAssertEqual(samplesWithoutOneLeader, 0, "exactly one leader by the processes' own clocks, all along")
        XCTAssertEqual(events(logs, "maintenance_leader").count, 1, logs.lines.suffix(20).joined(separator: "\n"))
        XCTAssertEqual(events(logs, "maintenance_leadership_lost"), [])
        XCTAssertEqual(events(logs, "leader_renew_failed"), [])

        busy.value.store(1, ordering: .relaxed)
        for contender in contenders { contender.stop() }
        for run in runs { await run.value }
        for task in load { await task.value }
        await pool.close()
        await observer.close()
    }

    /// A lease session that goes silent costs one short deadline (TTL/3) and a quick retry on a
    /// fresh session, not the lease.
    func testSilentLeaseConnectionCostsOneShortDeadlineNotTheLease() async throws {
        let url = try await TestDatabase.fresh()
        let proxy = try FaultProxy(targetPort: try XCTUnwrap(URLComponents(string: url)?.port))
        defer { proxy.stop() }
        let ttl = 6.0
        let logs = CapturingLogSink()
        let maintenance = Maintenance(client: leaseClient(proxy.url(replacingIn: url), ttl: ttl, name: "lease-frozen"),
                                      leaderID: "frozen", tasks: [], logger: Logger(minimumLevel: .debug, sink: logs), ttl: ttl,
                                      dutyInterval: 0.05)
        let run = Task { await maintenance.run() }
        let elected = try await eventually(10) { maintenance.isLeader }
        XCTAssertTrue(elected)
        proxy.freezeOpenConnections()
        let frozenAt = ContinuousClock.now
        let failed = try await eventually(10) { !events(logs, "leader_renew_failed").isEmpty }
        XCTAssertTrue(failed)
        // The next renewal (within TTL/3) hangs for at most its deadline (TTL/3), not the pool's 30 s.
        XCTAssertLessThan(ContinuousClock.now - frozenAt, .seconds(ttl / 3 * 2 + 0.5))
        let failedAt = ContinuousClock.now
        let renewed = try await eventually(5) { !events(logs, "leader_renewed").isEmpty }
        XCTAssertTrue(renewed, logs.lines.joined(separator: "\n"))
        XCTAssertLessThan(ContinuousClock.now - failedAt, .seconds(1.5), "a quick retry on a fresh session, not TTL/3 later")
        XCTAssertTrue(maintenance.isLeader)
        XCTAssertEqual(events(logs, "maintenance_leadership_lost"), [], logs.lines.joined(separator: "\n"))
        XCTAssertEqual(events(logs, "maintenance_leader").count, 1)
        maintenance.stop()
        await run.value
    }

    /// Another process holds the lease (ours lapsed, say): the running duty is stopped, with a
    /// line that says so, and a duty that checks its term between steps stops at the next step.
    func testDutyStopsWhenTheLeaseEnds() async throws {
        let url = try await TestDatabase.fresh()
        let observer = PostgresClient(conninfo: url, maxConnections: 1)
        let steps = Counter()
        struct SteppingDuty: MaintenanceTask {
            let name = "stepping_duty"
            let interval = 60.0
            let steps: Counter
            func run(term: LeaderTerm) async throws {
                while true {
                    try term.check()
                    steps.value.add(1, ordering: .relaxed)
                    // Uncancellable on purpose: only the term check can stop this duty.
                    await withCheckedContinuation { continuation in
                        DispatchQueue.global().asyncAfter(deadline: .now() + 0.02) { continuation.resume() }
                    }
                }
            }
        }
        let logs = CapturingLogSink()
        let ttl = 1.5
        let maintenance = Maintenance(client: leaseClient(url, ttl: ttl, name: "lease-stepping"), leaderID: "stepping",
                                      tasks: [SteppingDuty(steps: steps)],
                                      logger: Logger(minimumLevel: .debug, sink: logs), ttl: ttl, dutyInterval: 0.05)
        let run = Task { await maintenance.run() }
        let stepping = try await eventually(10) { steps.value.load(ordering: .relaxed) > 5 }
        XCTAssertTrue(stepping)
        let term = try XCTUnwrap(maintenance.term)
        _ = try await observer.query("UPDATE iap.leader SET leader_id = 'usurper', expires_at = now() + interval '1 minute'")
        let stoppedAt = ContinuousClock.now
        let interrupted = try await eventually(5) { !events(logs, "maintenance_duty_interrupted").isEmpty }
        XCTAssertTrue(interrupted, logs.lines.joined(separator: "\n"))
        // The next renewal (TTL/3) finds the usurper; the duty stops at its next step.
        XCTAssertLessThan(ContinuousClock.now - stoppedAt, .seconds(ttl / 3 + 0.5))
        XCTAssertTrue(events(logs, "maintenance_duty_interrupted")[0].contains("task=stepping_duty"))
        XCTAssertFalse(term.isHeld)
        XCTAssertFalse(maintenance.isLeader)
        let stepsAtStop = steps.value.load(ordering: .relaxed)
        try await Task.sleep(for: .milliseconds(300))
        XCTAssertEqual(steps.value.load(ordering: .relaxed), stepsAtStop, "no step after the lease ended")
        XCTAssertEqual(events(logs, "maintenance_leadership_lost").count, 1)

        // The usurper goes; this process leads again, under a new term: the old one stays over.
        _ = try await observer.query("DELETE FROM iap.leader")
        let again = try await eventually(5) { maintenance.isLeader }
        XCTAssertTrue(again)
        XCTAssertNotEqual(maintenance.term?.number, term.number)
        XCTAssertFalse(term.isHeld, "a duty of the old term never resumes under the new one")
        maintenance.stop()
        await run.value
        await observer.close()
    }

    /// The database goes away altogether: the leader's own clock ends the lease, and the duty
    /// (here one that never checks and waits on a long sleep) is cancelled before the lease's end
    /// by the server's reckoning, when another process could take over.
    func testUnreachableDatabaseCancelsTheDutyBeforeTheLeaseEnds() async throws {
        let url = try await TestDatabase.fresh()
        let proxy = try FaultProxy(targetPort: try XCTUnwrap(URLComponents(string: url)?.port))
        let observer = PostgresClient(conninfo: url, maxConnections: 1)
        let duty = Moments()
        struct SleepingDuty: MaintenanceTask {
            let name = "sleeping_duty"
            let interval = 60.0
            let moments: Moments
            func run(term: LeaderTerm) async throws {
                moments.began.withLock { $0 = Date() }
                do {
                    try await Task.sleep(for: .seconds(60))
                } catch {
                    moments.cancelled.withLock { $0 = Date() }
                    throw error
                }
            }
        }
        let logs = CapturingLogSink()
        let ttl = 3.0  // its margin (0.36 s) is what this test measures against; leave room for a busy machine
        let maintenance = Maintenance(client: leaseClient(proxy.url(replacingIn: url), ttl: ttl, name: "lease-cut"), leaderID: "cut",
                                      tasks: [SleepingDuty(moments: duty)], logger: Logger(minimumLevel: .debug, sink: logs), ttl: ttl,
                                      dutyInterval: 0.05)
        let run = Task { await maintenance.run() }
        let running = try await eventually(10) { duty.began.withLock { $0 != nil } }
        XCTAssertTrue(running)
        proxy.stop()
        let interrupted = try await eventually(10) { !events(logs, "maintenance_duty_interrupted").isEmpty }
        XCTAssertTrue(interrupted, logs.lines.joined(separator: "\n"))
        let cancelledAt = try XCTUnwrap(duty.cancelled.withLock { $0 })
        let expires = try await observer.query("SELECT expires_at FROM iap.leader WHERE leader_id = 'cut'")
        let leaseEnd = try XCTUnwrap(try expires.first?.decode(Date.self, at: 0))
        XCTAssertLessThan(cancelledAt, leaseEnd, "the duty stopped while the lease row still held (same host, same clock)")
        XCTAssertFalse(maintenance.isLeader)
        XCTAssertGreaterThanOrEqual(events(logs, "leader_renew_failed").count, 2, "quick retries while the lease held")
        maintenance.stop()
        await run.value
        await observer.close()
    }

    final class Counter: Sendable { let value = Atomic<Int>(0) }

    final class Moments: Sendable {
        let began = Mutex<Date?>(nil)
        let cancelled = Mutex<Date?>(nil)
    }

    private func eventually(_ seconds: Double, _ condition: () async throws -> Bool) async throws -> Bool {
        try await TestSupport.eventually(seconds, condition)
    }
}

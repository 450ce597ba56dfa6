import AppleSim
import EmbeddedPostgres
import Foundation
import Postgres
import TestSupport
import XCTest

/// Database drills with real worker processes: the path to PostgreSQL goes silent or resets,
/// and every paid receipt is still credited exactly once, with leadership kept alive.
final class DatabaseFaultTests: XCTestCase {
    private func port(of url: String) throws -> Int { try XCTUnwrap(URLComponents(string: url)?.port) }

    func testFreezingEveryConnectionOfThreeWorkersLosesNothing() async throws {
        let run = try await PaidReceiptRun.make(count: 1_500, latency: SimLatency(min: .milliseconds(20), max: .milliseconds(80)))
        let proxy = try FaultProxy(targetPort: try port(of: run.url))
        defer { proxy.stop() }
        let proxied = proxy.url(replacingIn: run.url)
        let workers = try (0..<3).map { _ in
            try ChildProcess.receiptWorker(["work"], environment: run.environment(databaseURL: proxied))
        }
        defer { workers.forEach { $0.signal(SIGKILL) } }
        try await run.waitForCredits(300, within: 120)
        proxy.freezeOpenConnections() // every session of every worker, LISTEN and the leader's included
        // A COMMIT already forwarded lands on the server: count after those settled.
        try await Task.sleep(for: .seconds(1))
        let atFreeze = try await run.credited()
        let resumed = try await run.secondsUntilCreditsGrow(from: atFreeze, within: 60).map { $0 + 1 }
        XCTAssertNotNil(resumed, "work resumed after the freeze")
        XCTAssertLessThan(resumed ?? .infinity, 4 + 10, "work resumes within LEASE_SECONDS + 10 s")
        let emptied = try await eventually(4 + 10) {
            try await run.client.query("SELECT count(*) FROM iap.jobs WHERE state = 'running' AND lease_expires_at < now() - interval '1 second'")[0]
                .decode(Int.self, at: 0) == 0
        }
        XCTAssertTrue(emptied, "the frozen workers' jobs were rescued")
        let credited = try await run.waitForCredits(run.count, within: 180)
        XCTAssertEqual(credited, run.count)
        let leaderStillElected = try await eventually(15) { try await run.leaderPID() != nil }
        XCTAssertTrue(leaderStillElected, "a live process leads")
        let leader = try await run.leaderPID()
        XCTAssertTrue(workers.contains { $0.pid == leader && $0.isRunning })
        try await stop(workers)
        try await run.assertEachCreditedExactlyOnce()
        await run.finish()
    }

    func testFreezingTheLeadersConnectionsAloneMovesNoMoney() async throws {
        let run = try await PaidReceiptRun.make(count: 1_200, latency: SimLatency(min: .milliseconds(20), max: .milliseconds(80)))
        let proxies = try (0..<3).map { _ in try FaultProxy(targetPort: try port(of: run.url)) }
        defer { proxies.forEach { $0.stop() } }
        let workers = try proxies.map { proxy in
            try ChildProcess.receiptWorker(["work"], environment: run.environment(databaseURL: proxy.url(replacingIn: run.url)))
        }
        defer { workers.forEach { $0.signal(SIGKILL) } }
        let elected = try await eventually(30) { try await run.leaderPID() != nil }
        XCTAssertTrue(elected)
        try await run.waitForCredits(200, within: 120)
        let leader = try await run.leaderPID()
        let index = try XCTUnwrap(workers.firstIndex { $0.pid == leader })
        proxies[index].freezeOpenConnections()
        let credited = try await run.waitForCredits(run.count, within: 180)
        XCTAssertEqual(credited, run.count)
        let led = try await eventually(15) { try await run.leaderPID().map { pid in workers.contains { $0.pid == pid } } ?? false }
        XCTAssertTrue(led, "a live process holds the lease")
        try await stop(workers)
        try await run.assertEachCreditedExactlyOnce()
        await run.finish()
    }

    func testConnectionsResetAtRandomLoseAndDoubleNothing() async throws {
        let run = try await PaidReceiptRun.make(count: 1_500, latency: SimLatency(min: .milliseconds(100), max: .milliseconds(200)))
        let proxy = try FaultProxy(targetPort: try port(of: run.url))
        defer { proxy.stop() }
        let workers = try (0..<3).map { _ in
            try ChildProcess.receiptWorker(["work"], environment: run.environment(databaseURL: proxy.url(replacingIn: run.url),
                                                                                   ["WORKER_CONCURRENCY": "20", "CLAIM_BATCH": "20"]))
        }
        defer { workers.forEach { $0.signal(SIGKILL) } }
        try await run.waitForCredits(100, within: 120)
        // Resets land anywhere while the work goes on: mid-claim, mid-completion, during COMMIT.
        var resets = 0
        let deadline = Date().addingTimeInterval(120)
        while Date() < deadline, try await run.credited() < run.count {
            resets += proxy.resetConnections(fraction: 0.5)
            try await Task.sleep(for: .milliseconds(150))
        }
        XCTAssertGreaterThan(resets, 20)
        let credited = try await run.waitForCredits(run.count, within: 180)
        XCTAssertEqual(credited, run.count)
        XCTAssertTrue(workers.allSatisfy(\.isRunning), "no worker exited")
        try await stop(workers)
        try await run.assertEachCreditedExactlyOnce()
        await run.finish()
    }

    func testWorkerAtTwoThousandInFlightStaysWithinItsConnectionBudget() async throws {
        let run = try await PaidReceiptRun.make(count: 3_000, latency: SimLatency(min: .milliseconds(800), max: .milliseconds(1200)))
        let worker = try ChildProcess.receiptWorker(["work"], environment: run.environment([
            "WORKER_CONCURRENCY": "2000", "CLAIM_BATCH": "500", "LEASE_SECONDS": "30", "APPLE_TIMEOUT_SECONDS": "10",
            "DATABASE_POOL_SIZE": "4",
        ]))
        defer { worker.signal(SIGKILL) }
        let database = try XCTUnwrap(URLComponents(string: run.url)?.path.dropFirst())
        var most = 0
        let deadline = Date().addingTimeInterval(120)
        while Date() < deadline, try await run.credited() < run.count {
            let sessions = try await run.client.query("""
                SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND application_name LIKE 'receipt-worker-%'
                """, [String(database)])[0].decode(Int.self, at: 0)
            most = max(most, sessions)
            try await Task.sleep(for: .milliseconds(50))
        }
        let credited = try await run.credited()
        XCTAssertEqual(credited, run.count)
        XCTAssertGreaterThan(most, 0)
        XCTAssertLessThanOrEqual(most, 4 + 1, "pool size + one LISTEN session")
        XCTAssertTrue(worker.stdout.contains("db_connections_max=5"), worker.stdout.prefix(2_000).description)
        try await stop([worker])
        await run.finish()
    }

    private func stop(_ workers: [ChildProcess]) async throws {
        for worker in workers { worker.signal(SIGTERM) }
        for worker in workers {
            let code = try await worker.wait(timeout: 60)
            XCTAssertEqual(code, 0, worker.stderr)
        }
    }

    private func eventually(_ seconds: Double, _ condition: () async throws -> Bool) async throws -> Bool {
        try await TestSupport.eventually(seconds, every: .milliseconds(100), condition)
    }
}

import EmbeddedPostgres
import Foundation
import Postgres
import TestSupport
import XCTest

/// Leadership is a lease in `iap.leader`; `migrate` needs a real session.
final class LeadershipTests: XCTestCase {
    private func environment(_ url: String) -> [String: String] {
        ["DATABASE_URL": url, "METRICS_LISTEN": "off", "LOG_LEVEL": "info", "SWEEP_INTERVAL_SECONDS": "0.2",
         "LEADER_TTL_SECONDS": "2"]
    }

    private func leaderPID(_ client: PostgresClient) async throws -> Int32? {
        let holder = try await client.query("SELECT leader_id FROM iap.leader WHERE name = 'maintenance' AND expires_at > now()")
            .first?.decode(String.self, at: 0)
        return holder.flatMap { $0.split(separator: ":").dropFirst().first }.flatMap { Int32($0) }
    }

    func testStoppedLeaderIsReplacedAndStepsDownWithoutRunningADuty() async throws {
        let url = try await TestDatabase.fresh()
        let client = PostgresClient(conninfo: url, maxConnections: 1)
        let workers = try (0..<2).map { _ in try ChildProcess.receiptWorker(["work", "--verifier", "noop"], environment: environment(url)) }
        defer { workers.forEach { $0.signal(SIGCONT); $0.signal(SIGKILL) } }
        let elected = try await eventually(30) { try await leaderPID(client) != nil }
        XCTAssertTrue(elected)
        let first = try await leaderPID(client)
        let leader = try XCTUnwrap(workers.first { $0.pid == first })
        let follower = try XCTUnwrap(workers.first { $0.pid != first })
        let leads = try await eventually(10) { leader.stdout.components(separatedBy: "event=sweep ").count > 2 }
        XCTAssertTrue(leads, "the leader runs its duties")

        leader.signal(SIGSTOP)
        let stoppedAt = Date()
        let replaced = try await eventually(20) { try await leaderPID(client) == follower.pid }
        XCTAssertTrue(replaced)
        // One TTL (2 s) plus one election round (TTL/3), with room for this test's own polling.
        XCTAssertLessThan(Date().timeIntervalSince(stoppedAt), 2 + 2.0 / 3 + 1.5, "replaced within TTL + one round")

        let outputAtStop = leader.stdout
        leader.signal(SIGCONT)
        let steppedDown = try await eventually(10) { leader.stdout.contains("event=maintenance_leadership_lost") }
        XCTAssertTrue(steppedDown, leader.stdout.suffix(2_000).description)
        try await Task.sleep(for: .milliseconds(500))
        let afterContinue = String(leader.stdout.dropFirst(outputAtStop.count))
        let beforeStepDown = afterContinue.components(separatedBy: "event=maintenance_leadership_lost").first ?? ""
        // At most a sweep whose statement was already on the wire when the process was stopped.
        XCTAssertLessThanOrEqual(beforeStepDown.components(separatedBy: "event=sweep ").count - 1, 1,
                                 "no duty ran after SIGCONT before the lease was seen to have ended:\n\(afterContinue)")
        let laterSweeps = afterContinue.components(separatedBy: "event=maintenance_leadership_lost").dropFirst().joined()
        XCTAssertFalse(laterSweeps.contains("event=sweep "), "the old leader stays a follower while the other holds the lease")
        let stillFollower = try await leaderPID(client)
        XCTAssertEqual(stillFollower, follower.pid)

        for worker in workers { worker.signal(SIGTERM) }
        for worker in workers {
            let code = try await worker.wait(timeout: 60)
            XCTAssertEqual(code, 0, worker.stderr)
        }
        let afterShutdown = try await leaderPID(client)
        XCTAssertNil(afterShutdown, "a clean shutdown resigns the lease")
        await client.close()
    }

    func testMigrateRefusesTransactionPoolingWithOneLine() async throws {
        guard let bouncer = try await TestDatabase.pgBouncer(.transaction) else { throw XCTSkip("needs the private cluster") }
        let url = try await TestDatabase.fresh(migrated: false)
        let result = try await ChildProcess.run([ChildProcess.receiptWorkerPath, "migrate", "--migrations", TestDatabase.migrationsDirectory.path],
                                                environment: ["DATABASE_URL": bouncer.url(replacingIn: url)])
        XCTAssertEqual(result.code, 2, result.stdout + result.stderr)
        let lines = result.stderr.split(separator: "\n")
        XCTAssertEqual(lines.count, 1, result.stderr)
        XCTAssertTrue(result.stderr.contains("transaction pooling"), result.stderr)
        XCTAssertFalse(result.stderr.contains("postgresql://"), "the URL (which may hold a password) is not echoed")
        // Through session pooling, and directly, migrate works (twice: the second run is a no-op).
        guard let session = try await TestDatabase.pgBouncer(.session) else { return }
        for target in [session.url(replacingIn: url), url] {
            let migrated = try await ChildProcess.run([ChildProcess.receiptWorkerPath, "migrate", "--migrations", TestDatabase.migrationsDirectory.path],
                                                      environment: ["DATABASE_URL": target])
            XCTAssertEqual(migrated.code, 0, migrated.stderr)
        }
    }

    private func eventually(_ seconds: Double, _ condition: () async throws -> Bool) async throws -> Bool {
        try await TestSupport.eventually(seconds, every: .milliseconds(50), condition)
    }
}

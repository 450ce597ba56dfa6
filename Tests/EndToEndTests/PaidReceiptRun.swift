import AppleSim
import Foundation
import Postgres
import TestSupport
import Workloads
import XCTest

/// Paid receipts waiting in a fresh database, apple-sim to verify them, and the checks of
/// "each credited exactly once": the common ground of the fleet drills.
struct PaidReceiptRun: Sendable {
    static let bundleID = "com.example.fleet"
    static let secret = "fleet-secret"
    let url: String
    let client: PostgresClient
    let simulator: AppleSimulator
    let count: Int

    /// `database`: the workers' URL of a migrated database (default: a fresh one on the test
    /// server); `observer`: where the test itself reads and writes (default: `database`).
    static func make(count: Int, latency: SimLatency, database: String? = nil, observer: String? = nil) async throws -> PaidReceiptRun {
        let url = if let database { database } else { try await TestDatabase.fresh() }
        let client = observer.map(Self.observerClient) ?? PostgresClient(conninfo: url, maxConnections: 2)
        let simulator = AppleSimulator(configuration: AppleSimConfiguration(sharedSecret: secret, seed: 7,
                                                                             faults: AppleSimFaults(latency: latency)))
        _ = try simulator.start()
        try await PaidReceipts.prepare(client, tag: "fleet", count: count, bundleID: bundleID).enqueue(client)
        return PaidReceiptRun(url: url, client: client, simulator: simulator, count: count)
    }

    /// The same run, read through `url` from now on (after a failover: the new primary, directly).
    func observing(_ url: String) -> PaidReceiptRun {
        PaidReceiptRun(url: self.url, client: Self.observerClient(url), simulator: simulator, count: count)
    }

    /// Short deadlines: the test must see a hung server as an error, not hang with it.
    private static func observerClient(_ url: String) -> PostgresClient {
        var configuration = PostgresConfiguration(conninfo: url, applicationName: "receipt-worker-test")
        configuration.callTimeout = 5
        configuration.connectTimeout = 3
        return PostgresClient(configuration: configuration, maxConnections: 2)
    }

    /// A worker's environment; `databaseURL` defaults to the database itself.
    func environment(databaseURL: String? = nil, _ extra: [String: String] = [:]) -> [String: String] {
        [
            "DATABASE_URL": databaseURL ?? url, "METRICS_LISTEN": "off", "LOG_LEVEL": "info",
            "APPLE_BUNDLE_ID": Self.bundleID, "APPLE_SHARED_SECRET": Self.secret,
            "APPLE_VERIFY_RECEIPT_URL": simulator.productionURL.absoluteString,
            "APPLE_VERIFY_RECEIPT_SANDBOX_URL": simulator.sandboxURL.absoluteString,
            "APPLE_TIMEOUT_SECONDS": "2", "RETRY_SCHEDULE": "0.2,0.5,1", "MAX_ATTEMPTS": "6",
            "SWEEP_INTERVAL_SECONDS": "1", "LEASE_SECONDS": "4", "LEADER_TTL_SECONDS": "3",
            "DATABASE_CALL_TIMEOUT_SECONDS": "2", "DATABASE_CONNECT_TIMEOUT_SECONDS": "2",
            "DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_SECONDS": "3",
            "WORKER_CONCURRENCY": "100", "CLAIM_BATCH": "50",
        ].merging(extra) { $1 }
    }

    func credited() async throws -> Int {
        try await client.query("SELECT count(*) FROM iap.credits")[0].decode(Int.self, at: 0)
    }

    /// Waits until `credited()` reaches `target`; returns the last count seen.
    @discardableResult
    func waitForCredits(_ target: Int, within seconds: Double) async throws -> Int {
        let deadline = Date().addingTimeInterval(seconds)
        var seen = 0
        while Date() < deadline {
            seen = try await credited()
            if seen >= target { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        return seen
    }

    /// Seconds until the ledger grows past `from` again.
    func secondsUntilCreditsGrow(from: Int, within seconds: Double) async throws -> Double? {
        let started = Date()
        while Date().timeIntervalSince(started) < seconds {
            if try await credited() > from { return Date().timeIntervalSince(started) }
            try await Task.sleep(for: .milliseconds(50))
        }
        return nil
    }

    /// Every paid receipt credited once, to its order, with nothing left running or alerted.
    func assertEachCreditedExactlyOnce(file: StaticString = #filePath, line: UInt = #line) async throws {
        let summary = try await client.query("""
            SELECT (SELECT count(*) FROM iap.credits),
                   (SELECT count(*) FROM iap.orders WHERE status = 'credited'),
                   (SELECT count(*) FROM iap.jobs WHERE state = 'running'),
                   (SELECT count(*) FROM iap.jobs WHERE state = 'done' AND outcome IN ('credited', 'already_credited')),
                   (SELECT count(*) FROM iap.alerts WHERE kind = 'paid_not_credited')
            """)[0]
        XCTAssertEqual(try summary.decode(Int.self, at: 0), count, "one ledger row per transaction", file: file, line: line)
        XCTAssertEqual(try summary.decode(Int.self, at: 1), count, "every order credited", file: file, line: line)
        XCTAssertEqual(try summary.decode(Int.self, at: 2), 0, "no job left running", file: file, line: line)
        XCTAssertEqual(try summary.decode(Int.self, at: 3), count, "no job lost", file: file, line: line)
        XCTAssertEqual(try summary.decode(Int.self, at: 4), 0, file: file, line: line)
    }

    /// The process id inside the worker id that holds an unexpired maintenance lease.
    func leaderPID() async throws -> Int32? {
        let holder = try await client.query("SELECT leader_id FROM iap.leader WHERE name = 'maintenance' AND expires_at > now()")
            .first?.decode(String.self, at: 0)
        return holder.flatMap { $0.split(separator: ":").dropFirst().first }.flatMap { Int32($0) }
    }

    func finish() async {
        await simulator.shutdown()
        await client.close()
    }
}

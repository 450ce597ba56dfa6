import AppleSim
import EmbeddedPostgres
import Foundation
import Postgres
import TestSupport
import XCTest

/// Paid receipts on a private primary with a streaming standby: the workers get the multi-host
/// URL (`target_session_attrs=read-write`), the test reads the current primary directly, so what
/// it measures never depends on the failover handling it is testing.
struct FailoverDrill {
    let set: PrivateReplicaSet
    private(set) var run: PaidReceiptRun

    static let database = "fleet"

    static func start(count: Int, synchronous: Bool,
                      latency: SimLatency = SimLatency(min: .milliseconds(20), max: .milliseconds(80))) async throws -> FailoverDrill {
        let set = try await PrivateReplicaSet.start(.init(synchronous: synchronous))
        do {
            try await set.createDatabase(database)
            let direct = set.directURL(slot: set.primary, database: database)
            let connection = try await PostgresConnection.connect(direct)
            try await Migrator(directory: TestDatabase.migrationsDirectory).migrate(connection)
            await connection.close()
            let run = try await PaidReceiptRun.make(count: count, latency: latency, database: set.url(database: database), observer: direct)
            return FailoverDrill(set: set, run: run)
        } catch {
            set.stop()
            throw error
        }
    }

    /// `count` workers on the multi-host URL; `extra` over the drill's usual environment.
    func workers(_ count: Int, _ extra: [String: String] = [:]) throws -> [ChildProcess] {
        try (0..<count).map { _ in try ChildProcess.receiptWorker(["work"], environment: run.environment(extra)) }
    }

    /// The standby promoted, the old primary fenced; the test reads the new primary from now on.
    /// Returns when the promoted standby accepts writes.
    mutating func failOver() async throws -> ContinuousClock.Instant {
        try await set.promoteStandby()
        let promoted = ContinuousClock.now
        try await set.fenceOldPrimary()
        let stale = run.client
        run = run.observing(set.directURL(slot: set.primary, database: Self.database))
        Task.detached { await stale.close() }  // its sessions may be to a hung server
        return promoted
    }

    /// Jobs of the run not yet in a final state.
    func unfinished() async throws -> Int {
        try await run.client.query("SELECT count(*) FROM iap.jobs WHERE state IN ('queued', 'running', 'retrying', 'timed_out')")[0]
            .decode(Int.self, at: 0)
    }

    /// Leases `count` queued jobs to the fleet's live worker ids, as claims whose replies were lost
    /// leave them: running, leased to a worker that never heard of them. Returns their ids.
    func leaseAsIfClaimRepliesWereLost(_ count: Int, leaseSeconds: Int) async throws -> [Int] {
        try await run.client.query("""
            WITH holders AS (SELECT array_agg(DISTINCT leased_by) AS ids FROM iap.jobs WHERE state = 'running'),
                 picked AS (SELECT id, row_number() OVER (ORDER BY id) AS n FROM iap.jobs
                            WHERE state = 'queued' ORDER BY id DESC LIMIT $1)
            UPDATE iap.jobs AS j
            SET state = 'running', attempts = j.attempts + 1, leased_by = h.ids[1 + p.n % cardinality(h.ids)],
                lease_expires_at = now() + make_interval(secs => $2)
            FROM picked p, holders h
            WHERE j.id = p.id AND j.state = 'queued' AND cardinality(h.ids) > 0
            RETURNING j.id
            """, [count, leaseSeconds]).map { try $0.decode(Int.self, at: 0) }
    }

    /// Transaction ids in the ledger now.
    func creditedTransactions() async throws -> Set<String> {
        Set(try await run.client.query("SELECT transaction_id FROM iap.credits").map { try $0.decode(String.self, at: 0) })
    }

    /// SIGTERM to each worker: every one exits 0 (in-flight work finished or released).
    func stop(_ workers: [ChildProcess], file: StaticString = #filePath, line: UInt = #line) async throws {
        for worker in workers { worker.signal(SIGTERM) }
        for worker in workers {
            let code = try await worker.wait(timeout: 60)
            XCTAssertEqual(code, 0, String(worker.stderr.suffix(2_000)), file: file, line: line)
        }
    }

    func finish() async {
        await run.finish()
        set.stop()
    }
}

extension ContinuousClock.Instant {
    var secondsAgo: Double {
        let elapsed = ContinuousClock.now - self
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }
}

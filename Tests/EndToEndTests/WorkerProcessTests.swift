import Foundation
import Postgres
import TestSupport
import XCTest

/// Real `receipt-worker work` processes against one database.
final class WorkerProcessTests: XCTestCase {
    func environment(_ url: String, _ extra: [String: String] = [:]) -> [String: String] {
        ["DATABASE_URL": url, "METRICS_LISTEN": "off", "LOG_LEVEL": "debug", "SWEEP_INTERVAL_SECONDS": "0.5"]
            .merging(extra) { $1 }
    }

    func enqueue(_ client: PostgresClient, _ count: Int) async throws {
        _ = try await client.query("""
            INSERT INTO iap.jobs (kind, user_id, order_id, payload, dedup_key)
            SELECT 'receipt', 'u' || n, 'o' || n, 'cA==', iap.job_dedup_key('receipt', 'u' || n, 'o' || n, 'cA==')
            FROM generate_series(1, $1) AS n
            """, [count])
    }

    func count(_ client: PostgresClient, _ state: String) async throws -> Int {
        try await client.query("SELECT count(*) FROM iap.jobs WHERE state = $1", [state])[0].decode(Int.self, at: 0)
    }

    func eventually(_ seconds: Double = 60, _ condition: () async throws -> Bool) async throws -> Bool {
        try await TestSupport.eventually(seconds, every: .milliseconds(100), condition)
    }

    /// job_id values of one event across the given logs.
    func jobIDs(_ event: String, in outputs: [String]) -> [Int] {
        outputs.flatMap { $0.split(separator: "\n") }
            .filter { $0.contains("event=\(event) ") }
            .compactMap { line in
                line.split(separator: " ").first { $0.hasPrefix("job_id=") }.flatMap { Int($0.dropFirst(7)) }
            }
    }

    func testFourProcessesDrainEachJobExactlyOnce() async throws {
        let url = try await TestDatabase.fresh()
        let client = PostgresClient(conninfo: url)
        try await enqueue(client, 20_000)
        let workers = try (0..<4).map { _ in
            try ChildProcess.receiptWorker(["work", "--verifier", "noop", "--concurrency", "200", "--claim-batch", "200"],
                                           environment: environment(url))
        }
        defer { workers.forEach { $0.signal(SIGKILL) } }
        let drained = try await eventually(180) { try await count(client, "done") == 20_000 }
        XCTAssertTrue(drained)
        for worker in workers { worker.signal(SIGTERM) }
        for worker in workers {
            let code = try await worker.wait(timeout: 60)
            XCTAssertEqual(code, 0, worker.stderr)
        }
        let outputs = workers.map(\.stdout)
        let claimed = jobIDs("job_claimed", in: outputs)
        let finished = jobIDs("job_finished", in: outputs)
        XCTAssertEqual(claimed.count, 20_000, "each job claimed once, by one process")
        XCTAssertEqual(Set(claimed).count, 20_000)
        XCTAssertEqual(finished.count, 20_000, "each job finished once")
        XCTAssertEqual(Set(finished).count, 20_000)
        XCTAssertGreaterThan(outputs.filter { $0.contains("event=job_finished") }.count, 1, "the work was shared")
        let notDone = try await client.query("SELECT count(*) FROM iap.jobs WHERE state <> 'done' OR attempts <> 1")[0].decode(Int.self, at: 0)
        XCTAssertEqual(notDone, 0)
        await client.close()
    }

    func testKilledWorkersJobsComeBackAfterTheLease() async throws {
        let url = try await TestDatabase.fresh()
        let client = PostgresClient(conninfo: url)
        try await enqueue(client, 200)
        let doomed = try ChildProcess.receiptWorker(
            ["work", "--verifier", "noop", "--noop-delay", "30", "--concurrency", "50", "--lease", "2"], environment: environment(url))
        defer { doomed.signal(SIGKILL) }
        let claimed = try await eventually { try await count(client, "running") == 50 }
        XCTAssertTrue(claimed)
        doomed.signal(SIGKILL)
        _ = try await doomed.wait()
        let survivor = try ChildProcess.receiptWorker(["work", "--verifier", "noop", "--lease", "2"], environment: environment(url))
        defer { survivor.signal(SIGKILL) }
        let drained = try await eventually { try await count(client, "done") == 200 }
        XCTAssertTrue(drained, survivor.stdout.suffix(2_000).description)
        survivor.signal(SIGTERM)
        let code = try await survivor.wait()
        XCTAssertEqual(code, 0)
        XCTAssertEqual(Set(jobIDs("lease_expired", in: [survivor.stdout])).count, 50)
        await client.close()
    }

    func testOneMaintenanceHolderAndHandoverOnKill() async throws {
        let url = try await TestDatabase.fresh()
        let workers = try (0..<2).map { _ in
            try ChildProcess.receiptWorker(["work", "--verifier", "noop"], environment: environment(url))
        }
        defer { workers.forEach { $0.signal(SIGKILL) } }
        let elected = try await eventually(30) { workers.contains { $0.stdout.contains("event=maintenance_leader") } }
        XCTAssertTrue(elected)
        try await Task.sleep(for: .seconds(1))
        let leaders = workers.filter { $0.stdout.contains("event=maintenance_leader") }
        XCTAssertEqual(leaders.count, 1, "exactly one process holds the duty")
        guard let leader = leaders.first, let follower = workers.first(where: { $0 !== leader }) else { return }
        leader.signal(SIGKILL)
        let handedOver = try await eventually(30) { follower.stdout.contains("event=maintenance_leader") }
        XCTAssertTrue(handedOver)
        follower.signal(SIGTERM)
        _ = try await follower.wait()
    }

    func testSigtermFinishesInFlightAndLeavesNothingRunning() async throws {
        let url = try await TestDatabase.fresh()
        let client = PostgresClient(conninfo: url)
        try await enqueue(client, 100)
        let worker = try ChildProcess.receiptWorker(
            ["work", "--verifier", "noop", "--noop-delay", "0.5", "--concurrency", "20", "--shutdown-grace", "10"],
            environment: environment(url))
        defer { worker.signal(SIGKILL) }
        let busy = try await eventually { try await count(client, "running") > 0 }
        XCTAssertTrue(busy)
        worker.signal(SIGTERM)
        let code = try await worker.wait(timeout: 30)
        XCTAssertEqual(code, 0, worker.stderr)
        let running = try await count(client, "running")
        XCTAssertEqual(running, 0)
        XCTAssertTrue(worker.stdout.contains("event=worker_stopped"))
        let done = try await count(client, "done")
        let queued = try await count(client, "queued")
        XCTAssertEqual(done + queued, 100)
        XCTAssertGreaterThan(done, 0)
        await client.close()
    }

    func testAWorkerRaisesItsOpenFileLimitAndSaysWhenItCannot() async throws {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_max > 512 else {
            throw XCTSkip("needs a hard limit of open files above 512")
        }
        let url = try await TestDatabase.fresh()
        let settings = environment(url, ["LOG_LEVEL": "info", "WORKER_CONCURRENCY": "1000"])
        func worker(_ limit: String) throws -> ChildProcess {
            try ChildProcess(["/bin/sh", "-c", "ulimit \(limit) 256 && exec \"$0\" work --verifier noop", ChildProcess.receiptWorkerPath],
                             environment: settings)
        }
        // A soft limit of 256 under a higher hard limit (a service manager's default) is raised to it.
        let raised = try worker("-S -n")
        defer { raised.signal(SIGKILL) }
        let started = try await eventually(30) { raised.stdout.contains("event=worker_started") }
        XCTAssertTrue(started, raised.stdout + raised.stderr)
        let limits = try String(contentsOfFile: "/proc/\(raised.pid)/limits", encoding: .utf8)
        let openFiles = limits.split(separator: "\n").first { $0.hasPrefix("Max open files") }?.split(separator: " ") ?? []
        XCTAssertEqual(openFiles.count, 6, limits)
        XCTAssertEqual(openFiles.dropFirst(3).first, String(limit.rlim_max)[...], limits)
        XCTAssertEqual(openFiles.dropFirst(4).first, String(limit.rlim_max)[...], limits)
        XCTAssertFalse(raised.stdout.contains("open_files_limit_low"), raised.stdout)

        // A hard limit of 256 cannot be raised: said once, with what the concurrency needs.
        let short = try worker("-n")
        defer { short.signal(SIGKILL) }
        let warned = try await eventually(30) { short.stdout.contains("event=worker_started") }
        XCTAssertTrue(warned, short.stdout + short.stderr)
        let warnings = short.stdout.split(separator: "\n").filter { $0.contains("event=open_files_limit_low") }
        XCTAssertEqual(warnings.count, 1, short.stdout)
        XCTAssertTrue(warnings.first?.contains("limit=256 ") == true, short.stdout)
        XCTAssertTrue(warnings.first?.contains("needed=10") == true, short.stdout)
        for process in [raised, short] {
            process.signal(SIGTERM)
            _ = try await process.wait()
        }
    }
}

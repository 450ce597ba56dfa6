import Foundation
import Observability
import Postgres
import Queue
import Synchronization
import TestSupport

/// A handler whose answers are scripted per attempt, for engine tests.
struct ScriptedHandler: JobHandler {
    let script: @Sendable (ClaimedJob) async -> JobOutcome

    func verify(_ job: ClaimedJob) async -> Verification<Never> { .decided(await script(job)) }
    func settle(_ items: [SettlementItem<Never>], on connection: PostgresConnection) async throws -> SettledBatch { SettledBatch(outcomes: []) }
}

/// Verifications that wait until released, each then finishing `done`, `credited`: jobs held
/// running while a test changes the database under the worker. `started` counts the runs.
final class HeldVerifications: Sendable {
    let started = Atomic<Int>(0)
    private let released = Atomic<Bool>(false)

    var handler: ScriptedHandler {
        ScriptedHandler { [self] _ in
            started.add(1, ordering: .relaxed)
            while !released.load(ordering: .relaxed) { try? await Task.sleep(for: .milliseconds(10)) }
            return .finish(.done, "credited", transactionIDs: [])
        }
    }

    func release() { released.store(true, ordering: .relaxed) }
}

struct QueueFixture {
    let url: String
    let client: PostgresClient
    let store: QueueStore
    let logs = CapturingLogSink()
    let registry = MetricsRegistry()

    static func make() async throws -> QueueFixture {
        let url = try await TestDatabase.fresh()
        let client = PostgresClient(conninfo: url, maxConnections: 4)
        return QueueFixture(url: url, client: client, store: QueueStore(client: client))
    }

    var logger: Logger { Logger(minimumLevel: .debug, sink: logs) }

    /// Enqueues `count` jobs; on `connection`, inside the caller's transaction.
    func enqueue(_ count: Int, prefix: String = "job", on connection: PostgresConnection? = nil) async throws {
        let sql = """
            INSERT INTO iap.jobs (kind, user_id, order_id, payload, dedup_key)
            SELECT 'receipt', 'user-' || (n % 17), $1 || '-' || n, 'cGF5bG9hZA==',
                   iap.job_dedup_key('receipt', 'user-' || (n % 17), $1 || '-' || n, 'cGF5bG9hZA==')
            FROM generate_series(1, $2) AS n
            """
        if let connection {
            _ = try await connection.query(sql, [prefix, count])
        } else {
            _ = try await client.query(sql, [prefix, count])
        }
    }

    func states() async throws -> [String: Int] {
        var result: [String: Int] = [:]
        for row in try await client.query("SELECT state, count(*) FROM iap.jobs GROUP BY state") {
            result[try row.decode(String.self, at: 0)] = try row.decode(Int.self, at: 1)
        }
        return result
    }

    func worker<H: JobHandler>(_ handler: H, configure: (inout QueueConfiguration) -> Void = { _ in }) -> QueueWorker {
        var configuration = QueueConfiguration()
        configuration.pollInterval = 0.05
        configuration.retryPolicy = .schedule([0.05])
        configure(&configuration)
        return QueueWorker(store: store, handler: handler, configuration: configuration, logger: logger,
                           metrics: QueueMetrics(registry: registry), listenerConninfo: url)
    }

    /// A worker running five jobs, each held in its verification (`held`), with slots to spare
    /// unless `configure` takes them: it claims again while they run. Nil if they did not all start.
    func workerHoldingFive(configure: (inout QueueConfiguration) -> Void = { _ in }) async throws
        -> (held: HeldVerifications, worker: QueueWorker, run: Task<Void, Never>)? {
        try await enqueue(5)
        let held = HeldVerifications()
        let worker = worker(held.handler) {
            $0.concurrency = 20
            $0.claimBatch = 10
            configure(&$0)
        }
        let run = Task { await worker.run() }
        let started = try await eventually { held.started.load(ordering: .relaxed) == 5 }
        guard started else {
            worker.shutdown()
            await run.value
            return nil
        }
        return (held, worker, run)
    }

    /// Polls `condition` until true or `seconds` pass.
    func eventually(_ seconds: Double = 30, _ condition: () async throws -> Bool) async throws -> Bool {
        try await TestSupport.eventually(seconds, condition)
    }
}

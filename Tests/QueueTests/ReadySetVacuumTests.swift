import Observability
import Postgres
@testable import Queue
import TestSupport
import XCTest

/// The leader vacuums the ready set once claims have left enough dead rows in it (and at least
/// as many as live ones), and not again until there are that many new ones.
final class ReadySetVacuumTests: XCTestCase {
    func testTheReadySetIsVacuumedOnceClaimsLeftEnoughDeadRows() async throws {
        // One session: the claims' statistics are flushed by the server process that made them.
        let client = PostgresClient(conninfo: try await TestDatabase.fresh(), maxConnections: 1)
        let store = QueueStore(client: client)
        let term = LeaderTerm.held(until: .now + .seconds(120))
        try await Self.enqueue(300, from: 0, client)
        let claimed = try await store.claim(limit: 300, workerID: "w", leaseSeconds: 60)
        XCTAssertEqual(claimed.count, 300)
        let counted = try await Self.counted(store, dead: 300, live: 0)
        XCTAssertTrue(counted, "the claims' deletions are counted")

        try await ReadySetVacuum(store: store, deadRows: 1_000, logger: Logger(sink: CapturingLogSink())).run(term: term)
        let untouched = try await Self.vacuums(client)
        XCTAssertEqual(untouched, 0, "fewer dead rows than the threshold: no vacuum")

        let duty = ReadySetVacuum(store: store, deadRows: 100, logger: Logger(sink: CapturingLogSink()))
        try await duty.run(term: term)
        let once = try await Self.vacuums(client)
        XCTAssertEqual(once, 1)
        let left = try await store.readySetRows().dead
        XCTAssertEqual(left, 0, "the claimed rows' dead versions are gone")
        try await duty.run(term: term)
        let still = try await Self.vacuums(client)
        XCTAssertEqual(still, 1, "no new dead rows: no second vacuum")

        // A backlog: 200 dead rows beside 800 live ones are left to autovacuum; 900 beside 100 are not.
        try await Self.enqueue(1_000, from: 300, client)
        _ = try await store.claim(limit: 200, workerID: "w", leaseSeconds: 60)
        let backlog = try await Self.counted(store, dead: 200, live: 800)
        XCTAssertTrue(backlog)
        try await duty.run(term: term)
        let besideBacklog = try await Self.vacuums(client)
        XCTAssertEqual(besideBacklog, 1, "fewer dead rows than live ones: no vacuum")
        _ = try await store.claim(limit: 700, workerID: "w", leaseSeconds: 60)
        let drained = try await Self.counted(store, dead: 900, live: 100)
        XCTAssertTrue(drained)
        try await duty.run(term: term)
        let twice = try await Self.vacuums(client)
        XCTAssertEqual(twice, 2)
        await client.close()
    }

    /// A role that does not own the ready set cannot vacuum it (PostgreSQL would skip it with a
    /// warning in its own log): the duty does not try, and says why once.
    func testARoleThatCannotVacuumTheReadySetIsReportedOnce() async throws {
        let url = try await TestDatabase.fresh()
        let owner = PostgresClient(conninfo: url, maxConnections: 1)
        try await Self.enqueue(300, from: 0, owner)
        _ = try await QueueStore(client: owner).claim(limit: 300, workerID: "w", leaseSeconds: 60)
        let counted = try await Self.counted(QueueStore(client: owner), dead: 300, live: 0)
        XCTAssertTrue(counted)
        let role = "rw_not_owner_\(UInt32.random(in: 0...UInt32.max))"
        _ = try await owner.query("CREATE ROLE \(role)")
        _ = try await owner.query("GRANT USAGE ON SCHEMA iap TO \(role)")

        let other = PostgresClient(conninfo: url, maxConnections: 1)
        _ = try await other.query("SET ROLE \(role)")
        let store = QueueStore(client: other)
        let mayVacuum = try await store.mayVacuumReadySet()
        XCTAssertFalse(mayVacuum)
        let ownerMay = try await QueueStore(client: owner).mayVacuumReadySet()
        XCTAssertTrue(ownerMay)
        let log = CapturingLogSink()
        let duty = ReadySetVacuum(store: store, deadRows: 100, logger: Logger(sink: log))
        let term = LeaderTerm.held(until: .now + .seconds(120))
        try await duty.run(term: term)
        try await duty.run(term: term)
        let vacuums = try await Self.vacuums(owner)
        XCTAssertEqual(vacuums, 0)
        let reports = log.lines.filter { $0.contains("event=ready_set_vacuum_not_permitted") }
        XCTAssertEqual(reports.count, 1, "\(log.lines)")
        XCTAssertTrue(reports.first?.contains("level=warning") ?? false)

        await other.close()
        _ = try await owner.query("DROP OWNED BY \(role)")
        _ = try await owner.query("DROP ROLE \(role)")
        await owner.close()
    }

    private static func enqueue(_ count: Int, from first: Int, _ client: PostgresClient) async throws {
        _ = try await client.query("""
            SELECT count(*) FROM iap.enqueue_jobs(array_fill('receipt'::text, ARRAY[$1::int]),
                                                  ARRAY(SELECT 'u' || g FROM generate_series($2::int + 1, $2::int + $1::int) g),
                                                  ARRAY(SELECT 'o' || g FROM generate_series($2::int + 1, $2::int + $1::int) g),
                                                  array_fill(NULL::text, ARRAY[$1::int]), array_fill('cGF5bG9hZA=='::text, ARRAY[$1::int]))
            """, [count, first])
    }

    /// Waits until the server's statistics show the ready set's rows (a session flushes its
    /// counts when idle, at most once a second unless asked).
    private static func counted(_ store: QueueStore, dead: Int, live: Int) async throws -> Bool {
        _ = try await store.client.query("SELECT pg_stat_force_next_flush()")
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
            let rows = try await store.readySetRows()
            if rows.dead >= dead && rows.live <= live { return true }
        }
        return false
    }

    private static func vacuums(_ client: PostgresClient) async throws -> Int {
        try await client.query("SELECT vacuum_count FROM pg_stat_user_tables WHERE relid = 'iap.job_ready'::regclass")[0].decode(Int.self, at: 0)
    }
}

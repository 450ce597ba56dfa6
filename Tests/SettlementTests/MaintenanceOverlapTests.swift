import Foundation
import Observability
import Postgres
import Queue
import Settlement
import TestSupport
import XCTest

/// The maintenance duties are safe if two leaders overlap briefly; no webhook twice.
final class MaintenanceOverlapTests: XCTestCase {
    private let term = LeaderTerm.held(until: .now + .seconds(3600))

    /// Two re-emitters (two leaders, briefly) read the same due alerts, and both wait on the row
    /// locks of a third transaction, which resolves half of them. When it commits, each alert still
    /// open is announced by exactly one of them and a resolved one by neither. (Without the
    /// condition repeated in the outer WHERE, READ COMMITTED's re-check lets both announce every one.)
    func testTwoReemittersAtOnceAnnounceEachOpenAlertOnce() async throws {
        let url = try await TestDatabase.fresh()
        let setup = PostgresClient(conninfo: url, maxConnections: 1)
        let alertCount = 40
        _ = try await setup.query("""
            INSERT INTO iap.alerts (kind, transaction_id, user_id, product_id, reason, last_notified_at, notified_count)
            SELECT 'paid_not_credited', 'overlap-' || n, 'user', 'coins', 'no_open_order', now() - interval '1 hour', 1
            FROM generate_series(1, $1) AS n
            """, [alertCount])
        let blocker = try await PostgresConnection.connect(url, applicationName: "overlap-blocker")
        let leaders = (0..<2).map { _ in
            (client: PostgresClient(conninfo: url, maxConnections: 1, applicationName: "overlap-reemitter"), logs: CapturingLogSink())
        }
        let reemitters = leaders.map { leader in
            AlertReemitter(client: leader.client, interval: 1, repeatAfter: 60,
                           alerts: AlertRecorder(logger: Logger(sink: leader.logs), metrics: SettlementMetrics(registry: MetricsRegistry()),
                                                 webhook: nil))
        }
        let resolved: Set<Int> = try await blocker.transaction { connection in
            let rows = try await connection.query("""
                UPDATE iap.alerts SET state = CASE WHEN id % 2 = 0 THEN 'resolved' ELSE state END,
                                      resolved_at = CASE WHEN id % 2 = 0 THEN now() END
                RETURNING id, state
                """)
            let resolved = Set(try rows.compactMap { row in try row.decode(String.self, at: 1) == "resolved" ? try row.decode(Int.self, at: 0) : nil })
            for reemitter in reemitters { Task { [term] in try await reemitter.run(term: term) } }
            let bothWaiting = try await eventually(10) {
                try await setup.query("""
                    SELECT count(*) FROM pg_stat_activity
                    WHERE application_name = 'overlap-reemitter' AND wait_event_type = 'Lock'
                    """)[0].decode(Int.self, at: 0) == 2
            }
            XCTAssertTrue(bothWaiting, "both re-emitters wait on the blocker's row locks")
            return resolved
        }
        let open = try await setup.query("SELECT id FROM iap.alerts WHERE state = 'open'").map { try $0.decode(Int.self, at: 0) }
        XCTAssertEqual(open.count, alertCount / 2)
        let done = try await eventually(10) {
            try await setup.query("SELECT count(*) FROM iap.alerts WHERE state = 'open' AND notified_count = 2")[0]
                .decode(Int.self, at: 0) == open.count
        }
        XCTAssertTrue(done)
        try await Task.sleep(for: .milliseconds(300))  // the second re-emitter has finished too
        var announced: [Int: Int] = [:]
        for leader in leaders {
            for line in leader.logs.lines where line.contains("event=paid_not_credited") && line.contains("repeat=true") {
                let id = line.split(separator: " ").first { $0.hasPrefix("alert_id=") }.flatMap { Int($0.dropFirst("alert_id=".count)) }
                announced[try XCTUnwrap(id), default: 0] += 1
            }
        }
        XCTAssertEqual(Set(announced.keys), Set(open), "every open alert is announced")
        XCTAssertEqual(announced.values.filter { $0 > 1 }.count, 0, "no alert announced twice: \(announced)")
        XCTAssertTrue(Set(announced.keys).isDisjoint(with: resolved), "a resolved alert is not announced")
        let counts = try await setup.query("SELECT max(notified_count) FROM iap.alerts")[0].decode(Int.self, at: 0)
        XCTAssertEqual(counts, 2)
        await blocker.close()
        for leader in leaders { await leader.client.close() }
        await setup.close()
    }

    /// A duty under a lease that has already ended does nothing at all.
    func testDutiesDoNothingOnceTheirTermHasEnded() async throws {
        let url = try await TestDatabase.fresh()
        let client = PostgresClient(conninfo: url, maxConnections: 1)
        _ = try await client.query("""
            INSERT INTO iap.alerts (kind, transaction_id, reason, last_notified_at, notified_count)
            VALUES ('paid_not_credited', 'ended-term', 'no_open_order', now() - interval '1 hour', 1)
            """)
        let ended = LeaderTerm.held(until: .now)
        let logs = CapturingLogSink()
        let reemitter = AlertReemitter(client: client, interval: 1, repeatAfter: 60,
                                       alerts: AlertRecorder(logger: Logger(sink: logs), metrics: SettlementMetrics(registry: MetricsRegistry()),
                                                             webhook: nil))
        do {
            try await reemitter.run(term: ended)
            XCTFail("ran under an ended term")
        } catch {
            XCTAssertTrue(error is LeaseEnded, "\(error)")
        }
        let count = try await client.query("SELECT notified_count FROM iap.alerts")[0].decode(Int.self, at: 0)
        XCTAssertEqual(count, 1)
        XCTAssertEqual(logs.lines, [])
        await client.close()
    }

    private func eventually(_ seconds: Double, _ condition: () async throws -> Bool) async throws -> Bool {
        try await TestSupport.eventually(seconds, condition)
    }
}

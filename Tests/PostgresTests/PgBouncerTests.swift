import EmbeddedPostgres
import Foundation
import Postgres
import TestSupport
import XCTest

/// The distribution's PgBouncer in transaction pooling mode is a supported deployment.
final class PgBouncerTests: XCTestCase {
    func testTransactionPoolingIsDetectedAndNeedsNoSessionState() async throws {
        guard let bouncer = try await TestDatabase.pgBouncer(.transaction) else { throw XCTSkip("needs the private cluster") }
        let url = try await TestDatabase.fresh()
        let pooled = PostgresClient(conninfo: bouncer.url(replacingIn: url), maxConnections: 3)
        // Prepared statements off behind the pooler: the same statements from many sessions,
        // many times, never collide on a server connection ("prepared statement rw_0 already exists").
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<6 {
                group.addTask {
                    for round in 0..<20 {
                        _ = try await pooled.query("SELECT iap.enqueue_receipt($1, $2, $3)", "u\(task)", "o\(task)-\(round)", "cmVjZWlwdA==")
                        _ = try await pooled.transaction { tx in
                            try await tx.query("SELECT count(*) FROM iap.jobs WHERE user_id = $1", "u\(task)")
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let jobs = try await pooled.query("SELECT count(*) FROM iap.jobs")[0].decode(Int.self, at: 0)
        XCTAssertEqual(jobs, 120)
        let connection = try await PostgresConnection.connect(bouncer.url(replacingIn: url))
        XCTAssertTrue(connection.isBehindPooler)
        // Timestamps decode without the session's TimeZone setting.
        let now = try await connection.query("SELECT now()")[0].decode(Date.self, at: 0)
        XCTAssertLessThan(abs(now.timeIntervalSinceNow), 60)
        await connection.close()
        let transactionMode = try await PoolingProbe.isTransactionPooling(PostgresConfiguration(conninfo: bouncer.url(replacingIn: url)))
        XCTAssertTrue(transactionMode)
        await pooled.close()
    }

    func testDirectAndSessionPoolingAreNotTransactionPooling() async throws {
        guard let bouncer = try await TestDatabase.pgBouncer(.session) else { throw XCTSkip("needs the private cluster") }
        let url = try await TestDatabase.fresh(migrated: false)
        let direct = try await PostgresConnection.connect(url)
        XCTAssertFalse(direct.isBehindPooler)
        await direct.close()
        let directProbe = try await PoolingProbe.isTransactionPooling(PostgresConfiguration(conninfo: url))
        XCTAssertFalse(directProbe)
        let sessionProbe = try await PoolingProbe.isTransactionPooling(PostgresConfiguration(conninfo: bouncer.url(replacingIn: url)))
        XCTAssertFalse(sessionProbe)
    }
}

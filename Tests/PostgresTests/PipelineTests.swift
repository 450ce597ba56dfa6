import Foundation
import Postgres
import TestSupport
import XCTest

/// Pipeline mode: several statements in one round trip, with the semantics of running them
/// one by one; transactions whose BEGIN and COMMIT travel with their statements.
final class PipelineTests: XCTestCase {
    private func connect(_ url: String, prepared: PostgresConfiguration.PreparedStatements) async throws -> PostgresConnection {
        var configuration = PostgresConfiguration(conninfo: url)
        configuration.preparedStatements = prepared
        return try await PostgresConnection.connect(configuration)
    }

    private func number(_ client: PostgresClient, _ sql: String) async throws -> Int {
        try await client.query(sql)[0].decode(Int.self, at: 0)
    }

    func testStatementsRunInOrderAndSeeEachOther() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        for prepared in [PostgresConfiguration.PreparedStatements.on, .off] {
            let connection = try await connect(url, prepared: prepared)
            _ = try await connection.query("DROP TABLE IF EXISTS t")
            _ = try await connection.query("CREATE TABLE t (id int PRIMARY KEY, v text)")
            let rows = try await connection.pipeline([
                PostgresStatement("INSERT INTO t VALUES ($1, $2), ($3, $4)", [1, "a", 2, "b"]),
                PostgresStatement("SELECT count(*) FROM t"),
                PostgresStatement("UPDATE t SET v = upper(v) WHERE id = ANY($1::int[]) RETURNING id", [[1, 2]]),
                PostgresStatement("SELECT string_agg(v, ',' ORDER BY id) FROM t"),
            ])
            XCTAssertEqual(rows.count, 4)
            XCTAssertEqual(rows[0].affectedRows, 2)
            XCTAssertEqual(try rows[1][0].decode(Int.self, at: 0), 2)
            XCTAssertEqual(Set(try rows[2].map { try $0.decode(Int.self, at: 0) }), [1, 2])
            XCTAssertEqual(try rows[3][0].decode(String.self, at: 0), "A,B")
            await connection.close()
        }
    }

    func testFirstErrorStopsTheRestAndTheConnectionStaysUsable() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        let connection = try await connect(url, prepared: .on)
        _ = try await connection.query("CREATE TABLE t (id int PRIMARY KEY)")
        do {
            _ = try await connection.pipeline([
                PostgresStatement("INSERT INTO t VALUES (1)"),
                PostgresStatement("INSERT INTO t VALUES (1)"),
                PostgresStatement("INSERT INTO t VALUES (2)"),
            ])
            XCTFail("expected a unique violation")
        } catch let error as PostgresError {
            XCTAssertTrue(error.isUniqueViolation, "\(error)")
        }
        // Outside a transaction the whole pipeline is one implicit transaction: nothing stays.
        let ids = try await connection.query("SELECT id FROM t ORDER BY id").map { try $0.decode(Int.self, at: 0) }
        XCTAssertEqual(ids, [])
        do {
            _ = try await connection.pipeline([PostgresStatement("SELECT 1"), PostgresStatement("SELECT $1::text", ["a\u{0}b"])])
            XCTFail("a NUL in a text parameter must be refused")
        } catch let error as PostgresError {
            XCTAssertEqual(error.sqlState, "22021")
        }
        let answer = try await connection.query("SELECT 41 + 1")[0].decode(Int.self, at: 0)
        XCTAssertEqual(answer, 42)
        await connection.close()
    }

    func testTransactionSendsBeginWithItsFirstStatementAndCommitsWithItsLast() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        let client = PostgresClient(conninfo: url, maxConnections: 1)
        _ = try await client.query("CREATE TABLE t (id int PRIMARY KEY)")
        // One transaction: both statements see the same transaction timestamp, and the
        // commit(after:) statements land with it.
        let sameTransaction = try await client.transaction { tx -> Bool in
            let first = try await tx.query("SELECT now()::text, txid_current()")[0]
            let rows = try await tx.commit(after: [
                PostgresStatement("INSERT INTO t VALUES ($1)", [1]),
                PostgresStatement("SELECT now()::text, txid_current()"),
            ])
            return try first.decode(String.self, at: 0) == rows[1][0].decode(String.self, at: 0)
                && first.decode(Int.self, at: 1) == rows[1][0].decode(Int.self, at: 1)
        }
        XCTAssertTrue(sameTransaction)
        let rowCount = try await number(client, "SELECT count(*) FROM t")
        XCTAssertEqual(rowCount, 1)
        // The connection went back to the pool outside any transaction.
        let idleInTransaction = try await number(client, "SELECT count(*) FROM pg_stat_activity WHERE state LIKE 'idle in%'")
        XCTAssertEqual(idleInTransaction, 0)
        await client.close()
    }

    func testAFailingStatementInCommitAfterCommitsNothing() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        let client = PostgresClient(conninfo: url, maxConnections: 1)
        _ = try await client.query("CREATE TABLE t (id int PRIMARY KEY)")
        _ = try await client.query("INSERT INTO t VALUES (1)")
        do {
            try await client.transaction { tx in
                _ = try await tx.query("INSERT INTO t VALUES (2)")
                _ = try await tx.commit(after: [PostgresStatement("INSERT INTO t VALUES (3)"), PostgresStatement("INSERT INTO t VALUES (1)"),
                                                PostgresStatement("INSERT INTO t VALUES (4)")])
            }
            XCTFail("expected a unique violation")
        } catch let error as PostgresError {
            XCTAssertTrue(error.isUniqueViolation, "\(error)")
        }
        let ids = try await client.query("SELECT id FROM t ORDER BY id").map { try $0.decode(Int.self, at: 0) }
        XCTAssertEqual(ids, [1])
        await client.close()
    }

    func testScriptsAndCopyInsideATransactionRollBack() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        let client = PostgresClient(conninfo: url, maxConnections: 1)
        _ = try await client.query("CREATE TABLE t (v text)")
        struct Boom: Error {}
        do {
            try await client.transaction { tx in
                try await tx.copyIn("COPY t (v) FROM STDIN", rows: [["copied"]])
                try await tx.execute(script: "INSERT INTO t VALUES ('scripted'); INSERT INTO t VALUES ('twice')")
                throw Boom()
            }
        } catch is Boom {}
        let afterRollback = try await number(client, "SELECT count(*) FROM t")
        XCTAssertEqual(afterRollback, 0)
        // A transaction that ran nothing leaves nothing open.
        try await client.transaction { _ in }
        let afterEmpty = try await number(client, "SELECT count(*) FROM t")
        XCTAssertEqual(afterEmpty, 0)
        await client.close()
    }
}

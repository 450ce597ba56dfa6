import Foundation
import Postgres
import TestSupport
import XCTest

final class PostgresConnectionTests: XCTestCase {
    func testTypedRoundTrip() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        let connection = try await PostgresConnection.connect(url)
        let token = UUID()
        let date = Date(timeIntervalSince1970: 1_795_000_000.123)
        let blob = Data([0, 1, 2, 255, 10, 92])
        let rows = try await connection.query(
            "SELECT $1::text, $2::bigint, $3::int, $4::bool, $5::timestamptz, $6::uuid, $7::bytea, $8::jsonb, $9::bigint[], $10::text[], $11::text",
            ["héllo 世界 'quoted' \\", Int(9_007_199_254_740_993), Int32(-7), true, date, token, blob,
             PostgresJSON(text: #"{"a": [1, "x"]}"#), [1, 2, 3], ["a b", "c,d", "e\"f", "", "NULL", "\\", "{x}", "héllo 世界 \\\"🙂"], String?.none])
        let row = try XCTUnwrap(rows.first)
        XCTAssertEqual(try row.decode(String.self, at: 0), "héllo 世界 'quoted' \\")
        XCTAssertEqual(try row.decode(Int.self, at: 1), 9_007_199_254_740_993)
        XCTAssertEqual(try row.decode(Int32.self, at: 2), -7)
        XCTAssertEqual(try row.decode(Bool.self, at: 3), true)
        XCTAssertEqual(try row.decode(Date.self, at: 4).timeIntervalSince1970, date.timeIntervalSince1970, accuracy: 0.000_01)
        XCTAssertEqual(try row.decode(UUID.self, at: 5), token)
        XCTAssertEqual(try row.decode(Data.self, at: 6), blob)
        XCTAssertEqual(try row.decode(PostgresJSON.self, at: 7).text, #"{"a": [1, "x"]}"#)
        XCTAssertEqual(try row.decode([Int].self, at: 8), [1, 2, 3])
        XCTAssertEqual(try row.decode([String].self, at: 9), ["a b", "c,d", "e\"f", "", "NULL", "\\", "{x}", "héllo 世界 \\\"🙂"])
        let withNulls = try await connection.query("SELECT array_length($1::text[], 1), $1::text[] IS NULL, ($1::text[])[2] IS NULL",
                                                   [["a", nil, "c"] as [String?]])
        XCTAssertEqual(try withNulls[0].decode(Int.self, at: 0), 3)
        XCTAssertEqual(try withNulls[0].decode(Bool.self, at: 1), false)
        XCTAssertEqual(try withNulls[0].decode(Bool.self, at: 2), true)
        XCTAssertNil(try row.decode(String?.self, at: 10))
        XCTAssertThrowsError(try row.decode(String.self, at: 10))
        await connection.close()
    }

    func testErrorsCarrySQLState() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        let connection = try await PostgresConnection.connect(url)
        _ = try await connection.query("CREATE TABLE t (id int PRIMARY KEY)")
        _ = try await connection.query("INSERT INTO t VALUES ($1)", 1)
        do {
            _ = try await connection.query("INSERT INTO t VALUES ($1)", 1)
            XCTFail("expected a unique violation")
        } catch let error as PostgresError {
            XCTAssertTrue(error.isUniqueViolation, "\(error)")
            XCTAssertFalse(error.isConnectionLost)
        }
        do {
            _ = try await connection.query("SELEC nonsense")
            XCTFail("expected a syntax error")
        } catch let error as PostgresError {
            XCTAssertEqual(error.sqlState, "42601")
        }
        // The connection is still usable after errors.
        let stillUsable = try await connection.query("SELECT 1").first?.decode(Int.self, at: 0)
        XCTAssertEqual(stillUsable, 1)
        await connection.close()
    }

    /// A prepared statement whose result changes type under it (a migration altering a column)
    /// fails once, then is prepared again: PostgreSQL would refuse it on every run otherwise.
    func testAPreparedStatementFailsOnceWhenItsResultTypeChanges() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        let connection = try await PostgresConnection.connect(url)
        _ = try await connection.query("CREATE TABLE t (a int)")
        _ = try await connection.query("INSERT INTO t VALUES ($1)", 7)
        let select = "SELECT a FROM t WHERE a = $1"
        let before = try await connection.query(select, 7)[0].decode(Int.self, at: 0)
        XCTAssertEqual(before, 7)
        let pipelined = try await connection.pipeline([PostgresStatement(select, [7]), PostgresStatement("SELECT count(*) FROM t")])
        XCTAssertEqual(pipelined.count, 2)

        let migration = try await PostgresConnection.connect(url)
        _ = try await migration.query("ALTER TABLE t ALTER COLUMN a TYPE bigint")
        await migration.close()
        for round in 0..<2 { // alone, then in a pipeline
            do {
                if round == 0 {
                    _ = try await connection.query(select, 7)
                } else {
                    _ = try await connection.query("ALTER TABLE t ALTER COLUMN a TYPE int")
                    _ = try await connection.pipeline([PostgresStatement("SELECT count(*) FROM t"), PostgresStatement(select, [7])])
                }
                XCTFail("round \(round): the first run after the change is refused by the server")
            } catch let error as PostgresError {
                XCTAssertEqual(error.sqlState, "0A000", "round \(round): \(error)")
            }
            let after = try await connection.query(select, 7)[0].decode(Int.self, at: 0)
            XCTAssertEqual(after, 7, "round \(round): prepared again")
        }
        await connection.close()
    }

    func testTransactionsCommitAndRollBack() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        let client = PostgresClient(conninfo: url, maxConnections: 2)
        _ = try await client.query("CREATE TABLE t (v text)")
        _ = try await client.transaction { tx in try await tx.query("INSERT INTO t VALUES ('kept')") }
        struct Boom: Error {}
        do {
            _ = try await client.transaction { tx -> Int in
                _ = try await tx.query("INSERT INTO t VALUES ('dropped')")
                throw Boom()
            }
        } catch is Boom {}
        let values = try await client.query("SELECT v FROM t").map { try $0.decode(String.self, at: 0) }
        XCTAssertEqual(values, ["kept"])
        await client.close()
    }

    func testSerializationFailureIsRecognised() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        let first = try await PostgresConnection.connect(url)
        let second = try await PostgresConnection.connect(url)
        _ = try await first.query("CREATE TABLE c (id int PRIMARY KEY, n int)")
        _ = try await first.query("INSERT INTO c VALUES (1, 0)")
        _ = try await first.query("BEGIN ISOLATION LEVEL SERIALIZABLE")
        _ = try await second.query("BEGIN ISOLATION LEVEL SERIALIZABLE")
        _ = try await first.query("SELECT n FROM c WHERE id = 1")
        _ = try await second.query("SELECT n FROM c WHERE id = 1")
        _ = try await first.query("UPDATE c SET n = n + 1 WHERE id = 1")
        _ = try await first.query("COMMIT")
        do {
            _ = try await second.query("UPDATE c SET n = n + 1 WHERE id = 1")
            XCTFail("expected a serialization failure")
        } catch let error as PostgresError {
            XCTAssertTrue(error.isSerializationFailure, "\(error)")
        }
        _ = try await second.query("ROLLBACK")
        await first.close()
        await second.close()
    }

    func testCopyTenThousandMultibyteRows() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        let connection = try await PostgresConnection.connect(url)
        _ = try await connection.query("CREATE TABLE words (n int, word text, note text)")
        let rows: [[String?]] = (0..<10_000).map { n in
            [String(n), "掉单-\(n)-ünïcödé 🚀\t\\tab\nline", n % 7 == 0 ? nil : "note \(n)"]
        }
        let loaded = try await connection.copyIn("COPY words (n, word, note) FROM STDIN", rows: rows)
        XCTAssertEqual(loaded, 10_000)
        let check = try await connection.query("SELECT count(*), count(note), max(word) FILTER (WHERE n = 4242) FROM words")
        XCTAssertEqual(try check[0].decode(Int.self, at: 0), 10_000)
        XCTAssertEqual(try check[0].decode(Int.self, at: 1), 10_000 - (0..<10_000).filter { $0 % 7 == 0 }.count)
        XCTAssertEqual(try check[0].decode(String.self, at: 2), "掉单-4242-ünïcödé 🚀\t\\tab\nline")
        // A bad row fails the whole COPY and the connection stays usable.
        do {
            try await connection.copyIn("COPY words (n, word, note) FROM STDIN", rows: [["not a number", "x", nil]])
            XCTFail("expected COPY to fail")
        } catch let error as PostgresError {
            XCTAssertEqual(error.sqlState, "22P02")
        }
        let total = try await connection.query("SELECT count(*) FROM words")[0].decode(Int.self, at: 0)
        XCTAssertEqual(total, 10_000)
        await connection.close()
    }

    func testBadURLGivesClearError() async throws {
        do {
            _ = try await PostgresConnection.connect("postgresql://nobody@127.0.0.1:1/nowhere?connect_timeout=2")
            XCTFail("expected a connection error")
        } catch let error as PostgresError {
            XCTAssertEqual(error.kind, .connectionFailed)
            XCTAssertTrue(error.description.contains("cannot connect"), error.description)
            XCTAssertFalse(error.description.contains("\n"))
        }
        do {
            _ = try await PostgresConnection.connect("this is not a url")
            XCTFail("expected a parse error")
        } catch let error as PostgresError {
            XCTAssertEqual(error.kind, .connectionFailed)
        }
    }

    func testPoolLimitsConnectionsAndServesWaiters() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        let client = PostgresClient(conninfo: url, maxConnections: 3)
        let pids = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<30 {
                group.addTask { try await client.query("SELECT pg_backend_pid() FROM pg_sleep(0.01)")[0].decode(Int.self, at: 0) }
            }
            var seen = Set<Int>()
            for try await pid in group { seen.insert(pid) }
            return seen
        }
        XCTAssertLessThanOrEqual(pids.count, 3)
        await client.close()
    }
}

import Foundation
import Postgres
import TestSupport
import XCTest

/// Migrations marked `-- migrate: no-transaction` (for CREATE INDEX CONCURRENTLY).
final class NoTransactionMigrationTests: XCTestCase {
    static let table = Migration(version: 1, name: "table", sql: "CREATE SCHEMA IF NOT EXISTS iap; CREATE TABLE iap.things (id int, name text);")
    static let index = Migration(version: 2, name: "index", sql: """
        -- migrate: no-transaction
        -- builds without blocking writers
        DROP INDEX CONCURRENTLY IF EXISTS iap.things_by_name;
        CREATE INDEX CONCURRENTLY things_by_name
            ON iap.things (name);
        """)

    func testTheMarkerAndTheStatements() {
        XCTAssertTrue(Self.table.runsInTransaction)
        XCTAssertFalse(Self.index.runsInTransaction)
        XCTAssertEqual(Self.index.statements.count, 2)
        XCTAssertTrue(Self.index.statements[1].contains("CREATE INDEX CONCURRENTLY things_by_name\n    ON iap.things (name);"))
    }

    /// A batched backfill: a DO block whose body has `;` at line ends, and COMMITs between batches.
    static let backfill = Migration(version: 2, name: "backfill", sql: """
        -- migrate: no-transaction
        DO $$
        DECLARE
            v_done int := 0; -- a comment; with a semicolon
        BEGIN
            WHILE v_done < 3 LOOP
                INSERT INTO iap.things VALUES (v_done, 'it''s; fine');
                v_done := v_done + 1;
                COMMIT;
            END LOOP;
        END
        $$;
        CREATE INDEX CONCURRENTLY things_by_id ON iap.things (id); -- after the block
        /* a block comment;
           over lines; */ SELECT 1;
        SELECT $tag$ a $$ b; $tag$, $1;
        """)

    func testADollarQuotedBodyIsOneStatement() {
        let statements = Self.backfill.statements
        XCTAssertEqual(statements.count, 4, statements.joined(separator: "\n----\n"))
        XCTAssertTrue(statements[0].hasPrefix("-- migrate: no-transaction\nDO $$"))
        XCTAssertTrue(statements[0].hasSuffix("END\n$$;\n"))
        XCTAssertTrue(statements[1].contains("CREATE INDEX CONCURRENTLY things_by_id"))
        XCTAssertTrue(statements[2].contains("SELECT 1;"))
        XCTAssertTrue(statements[3].contains("$tag$ a $$ b; $tag$"))
    }

    func testABackfillThatCommitsAsItGoesIsApplied() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        let connection = try await PostgresConnection.connect(url)
        let backfill = Migration(version: 2, name: "backfill", sql: Self.backfill.statements.prefix(2).joined())
        let applied = try await Migrator(migrations: [Self.table, backfill]).migrate(connection)
        XCTAssertEqual(applied, [1, 2])
        let rows = try await connection.query("SELECT count(*) FROM iap.things WHERE name = 'it''s; fine'")[0].decode(Int.self, at: 0)
        XCTAssertEqual(rows, 3)
        await connection.close()
    }

    func testAConcurrentIndexBuildIsAppliedAndRecorded() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        let connection = try await PostgresConnection.connect(url)
        let applied = try await Migrator(migrations: [Self.table, Self.index]).migrate(connection)
        XCTAssertEqual(applied, [1, 2])
        let valid = try await connection.query("""
            SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = 'things_by_name'
            """)[0].decode(Bool.self, at: 0)
        XCTAssertTrue(valid)
        let again = try await Migrator(migrations: [Self.table, Self.index]).migrate(connection)
        XCTAssertEqual(again, [])
        await connection.close()
    }

    func testWithoutTheMarkerPostgreSQLRefusesTheConcurrentBuild() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        let connection = try await PostgresConnection.connect(url)
        let unmarked = Migration(version: 2, name: "index", sql: "CREATE INDEX CONCURRENTLY things_by_name ON iap.things (name);")
        do {
            try await Migrator(migrations: [Self.table, unmarked]).migrate(connection)
            XCTFail("expected CREATE INDEX CONCURRENTLY to be refused inside a transaction")
        } catch let error as PostgresError {
            XCTAssertTrue(error.message.contains("transaction block"), error.message)
        }
        await connection.close()
    }

    func testAFailedRunIsRepairedByRunningAgain() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        let connection = try await PostgresConnection.connect(url)
        _ = try await Migrator(migrations: [Self.table]).migrate(connection)
        _ = try await connection.query("INSERT INTO iap.things VALUES (1, 'a'), (2, 'a')")
        // A unique build over duplicates fails midway and leaves an INVALID index behind.
        let failing = Migration(version: 2, name: "unique", sql: """
            -- migrate: no-transaction
            DROP INDEX CONCURRENTLY IF EXISTS iap.things_unique;
            CREATE UNIQUE INDEX CONCURRENTLY things_unique ON iap.things (name);
            """)
        do {
            try await Migrator(migrations: [Self.table, failing]).migrate(connection)
            XCTFail("expected the unique build to fail")
        } catch is PostgresError {}
        let recorded = try await connection.query("SELECT count(*) FROM iap.schema_migrations WHERE version = 2")[0].decode(Int.self, at: 0)
        XCTAssertEqual(recorded, 0, "a failed no-transaction migration is not recorded")
        _ = try await connection.query("DELETE FROM iap.things WHERE id = 2")
        let applied = try await Migrator(migrations: [Self.table, failing]).migrate(connection)
        XCTAssertEqual(applied, [2])
        let valid = try await connection.query("""
            SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = 'things_unique'
            """)[0].decode(Bool.self, at: 0)
        XCTAssertTrue(valid, "the leftover invalid index was dropped and built again")
        await connection.close()
    }
}

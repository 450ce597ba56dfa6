import Foundation
@testable import Postgres
import TestSupport
import XCTest

/// An empty database is built from Migrations/baseline in one transaction; any other database
/// upgrades file by file. Both must end with the same schema, the same rows and the same
/// iap.schema_migrations, compared with the system's pg_dump.
final class BaselineMigrationTests: XCTestCase {
    func testTheBaselineAndEveryFileBuildTheSameDatabase() async throws {
        let migrator = try Migrator(directory: TestDatabase.migrationsDirectory)
        XCTAssertNotNil(migrator.baseline, "Migrations/baseline holds no baseline")
        let all = migrator.migrations.map(\.version)

        let viaBaseline = try await TestDatabase.fresh(migrated: false)
        let viaFiles = try await TestDatabase.fresh(migrated: false)
        let first = try await migrate(viaBaseline, with: migrator)
        let second = try await migrate(viaFiles, with: migrator.withoutBaseline)
        XCTAssertEqual(first, all)
        XCTAssertEqual(second, all)
        let baselineDropped = try await droppedColumns(viaBaseline)
        let filesDropped = try await droppedColumns(viaFiles)
        XCTAssertEqual(baselineDropped, 0, "the empty database was built from the baseline")
        XCTAssertGreaterThan(filesDropped, 0, "the other one replayed the files (0024 drops columns)")

        assertSame(try await schema(viaBaseline), try await schema(viaFiles), "pg_dump --schema-only")
        assertSame(try await rows(viaBaseline), try await rows(viaFiles), "pg_dump --data-only (seed rows, sequences)")
        let recordedViaBaseline = try await recorded(viaBaseline)
        let recordedViaFiles = try await recorded(viaFiles)
        XCTAssertEqual(recordedViaBaseline, recordedViaFiles)
        XCTAssertEqual(recordedViaBaseline.map(\.version), all)

        let again = try await migrate(viaBaseline, with: migrator)
        XCTAssertEqual(again, [], "a second migrate is a no-op")
    }

    /// A database migrated up to an earlier migration keeps upgrading file by file and reaches
    /// the schema a fresh install gets from the baseline.
    func testAnEarlierDatabaseUpgradesFileByFileToTheSameSchema() async throws {
        let migrator = try Migrator(directory: TestDatabase.migrationsDirectory)
        let earlier = try await TestDatabase.fresh(migrated: false)
        _ = try await migrate(earlier, with: Migrator(migrations: migrator.migrations.filter { $0.version <= 20 }))
        let upgraded = try await migrate(earlier, with: migrator)
        XCTAssertEqual(upgraded, migrator.migrations.map(\.version).filter { $0 > 20 })

        let fresh = try await TestDatabase.fresh(migrated: false)
        _ = try await migrate(fresh, with: migrator)
        let freshDropped = try await droppedColumns(fresh)
        XCTAssertEqual(freshDropped, 0)
        assertSame(try await schema(fresh), try await schema(earlier), "pg_dump --schema-only")
        assertSame(try await rows(fresh), try await rows(earlier), "pg_dump --data-only")
        let recordedEarlier = try await recorded(earlier)
        let recordedFresh = try await recorded(fresh)
        XCTAssertEqual(recordedEarlier, recordedFresh)

        let again = try await migrate(earlier, with: migrator)
        XCTAssertEqual(again, [])
    }

    /// "Empty" means nothing recorded and nothing in the iap schema: a database whose iap schema
    /// holds anything else is migrated file by file.
    func testAnIapSchemaHoldingAnythingIsNotEmpty() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        let connection = try await PostgresConnection.connect(url)
        try await connection.execute(script: "CREATE SCHEMA iap; CREATE TYPE iap.web_tier_mood AS ENUM ('calm');")
        await connection.close()
        let migrator = try Migrator(directory: TestDatabase.migrationsDirectory)
        let applied = try await migrate(url, with: migrator)
        XCTAssertEqual(applied, migrator.migrations.map(\.version))
        let dropped = try await droppedColumns(url)
        XCTAssertGreaterThan(dropped, 0, "replayed file by file")
    }

    /// Migrations numbered after the baseline apply on top of it, file by file, with their own
    /// transaction rule.
    func testLaterMigrationsApplyOnTopOfTheBaseline() async throws {
        let migrator = try Migrator(directory: TestDatabase.migrationsDirectory)
        let baseline = try XCTUnwrap(migrator.baseline)
        let next = (migrator.migrations.map(\.version).max() ?? baseline.version) + 1
        let later = [
            Migration(version: next, name: "later_table", sql: "CREATE TABLE iap.later (id bigint PRIMARY KEY, note text);"),
            Migration(version: next + 1, name: "later_index", sql: """
                -- migrate: no-transaction
                DROP INDEX CONCURRENTLY IF EXISTS iap.later_by_note;
                CREATE INDEX CONCURRENTLY later_by_note ON iap.later (note);
                """),
        ]
        let extended = Migrator(migrations: migrator.migrations + later, baseline: baseline)
        let url = try await TestDatabase.fresh(migrated: false)
        let applied = try await migrate(url, with: extended)
        XCTAssertEqual(applied, extended.migrations.map(\.version))
        let dropped = try await droppedColumns(url)
        XCTAssertEqual(dropped, 0, "built from the baseline")
        let client = PostgresClient(conninfo: url, maxConnections: 1)
        let valid = try await client.query("""
            SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = 'later_by_note'
            """)[0].decode(Bool.self, at: 0)
        XCTAssertTrue(valid)
        await client.close()
        let recordedRows = try await recorded(url)
        XCTAssertEqual(recordedRows.suffix(2).map(\.name), ["later_table", "later_index"])
        let again = try await migrate(url, with: extended)
        XCTAssertEqual(again, [])
    }

    /// A database that recorded whole-file checksums (of the files as they are, or as they were
    /// before only their comments were edited) still migrates; an edited statement is refused.
    func testWholeFileChecksumsRecordedEarlierAreAccepted() async throws {
        let migrator = try Migrator(directory: TestDatabase.migrationsDirectory)
        let url = try await TestDatabase.fresh()
        let client = PostgresClient(conninfo: url, maxConnections: 1)
        let first = migrator.migrations[0]
        _ = try await client.query("UPDATE iap.schema_migrations SET checksum = $1 WHERE version = $2",
                                   first.wholeFileChecksum, first.version)
        for (version, earlier) in MigrationChecksums.wholeFileBeforeCommentEdits {
            let migration = try XCTUnwrap(migrator.migrations.first { $0.version == version })
            XCTAssertEqual(migration.name, earlier.name)
            _ = try await client.query("UPDATE iap.schema_migrations SET checksum = $1 WHERE version = $2", earlier.checksum, version)
        }
        await client.close()
        let applied = try await migrate(url, with: migrator)
        XCTAssertEqual(applied, [])
    }

    func testABaselineMustStandForMigrationsInTheFolder() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("baseline-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("baseline"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try "CREATE TABLE iap.a (id int);".write(to: folder.appendingPathComponent("0001_a.sql"), atomically: true, encoding: .utf8)
        XCTAssertNil(try Migrator(directory: folder).baseline, "an empty baseline folder: no baseline")
        try "CREATE TABLE iap.a (id int);".write(to: folder.appendingPathComponent("baseline/0002_baseline.sql"), atomically: true, encoding: .utf8)
        XCTAssertThrowsError(try Migrator(directory: folder)) { XCTAssertTrue("\($0)".contains("not in the folder"), "\($0)") }
        try "CREATE TABLE iap.b (id int);".write(to: folder.appendingPathComponent("0002_b.sql"), atomically: true, encoding: .utf8)
        let migrator = try Migrator(directory: folder)
        XCTAssertEqual(migrator.baseline?.version, 2)
        XCTAssertEqual(migrator.migrations.map(\.version), [1, 2], "the baseline is not a migration of its own")
        try "CREATE TABLE iap.a (id int);".write(to: folder.appendingPathComponent("baseline/0001_baseline.sql"), atomically: true, encoding: .utf8)
        XCTAssertThrowsError(try Migrator(directory: folder)) { XCTAssertTrue("\($0)".contains("more than one baseline"), "\($0)") }
    }

    // MARK: - Helpers

    private func migrate(_ url: String, with migrator: Migrator) async throws -> [Int] {
        let connection = try await PostgresConnection.connect(url)
        do {
            let applied = try await migrator.migrate(connection)
            await connection.close()
            return applied
        } catch {
            await connection.close()
            throw error
        }
    }

    /// Columns dropped from iap tables: the file-by-file path leaves some behind (0024 drops
    /// iap.job_queue's request columns); a table created from the baseline has none.
    private func droppedColumns(_ url: String) async throws -> Int {
        let client = PostgresClient(conninfo: url, maxConnections: 1)
        let count = try await client.query("""
            SELECT count(*) FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
            WHERE c.relnamespace = 'iap'::regnamespace AND a.attisdropped
            """)[0].decode(Int.self, at: 0)
        await client.close()
        return count
    }

    private func recorded(_ url: String) async throws -> [SchemaMigrationRow] {
        let client = PostgresClient(conninfo: url, maxConnections: 1)
        let rows = try await client.query("SELECT version, name, checksum FROM iap.schema_migrations ORDER BY version")
        await client.close()
        return try rows.map { SchemaMigrationRow(version: try $0.decode(Int.self, at: 0), name: try $0.decode(String.self, at: 1),
                                                 checksum: try $0.decode(String.self, at: 2)) }
    }

    private func schema(_ url: String) async throws -> String {
        try await PgDump.run(["--schema-only"], url)
    }

    /// Every row but iap.schema_migrations' (their applied_at differ): the seeded rows and the
    /// sequences' positions.
    private func rows(_ url: String) async throws -> String {
        try await PgDump.run(["--data-only", "--exclude-table-data=iap.schema_migrations"], url)
    }

    /// Equal dumps; on a difference, the first differing lines rather than two whole dumps.
    private func assertSame(_ left: String, _ right: String, _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        guard left != right else { return }
        let a = left.split(separator: "\n", omittingEmptySubsequences: false)
        let b = right.split(separator: "\n", omittingEmptySubsequences: false)
        let at = (0..<min(a.count, b.count)).first { a[$0] != b[$0] } ?? min(a.count, b.count)
        let context = { (lines: [Substring]) in lines[max(0, at - 3)..<min(lines.count, at + 8)].joined(separator: "\n") }
        XCTFail("\(what) differs at line \(at + 1):\n--- baseline\n\(context(a))\n--- file by file\n\(context(b))", file: file, line: line)
    }
}

private struct SchemaMigrationRow: Equatable {
    let version: Int
    let name: String
    let checksum: String
}

/// The pg_dump of the PostgreSQL installation the test cluster runs on (found as the test
/// support finds initdb and pg_ctl: PATH first, then Debian's versioned folders).
private enum PgDump {
    static func path() throws -> String {
        var folders = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        let versioned = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        folders += versioned.compactMap(Int.init).sorted(by: >).map { "/usr/lib/postgresql/\($0)/bin" }
        for folder in folders where FileManager.default.isExecutableFile(atPath: folder + "/pg_ctl") {
            // PATH may hold only a link to pg_ctl: its installation's folder has pg_dump.
            let installation = URL(fileURLWithPath: folder + "/pg_ctl").resolvingSymlinksInPath().deletingLastPathComponent().path
            if FileManager.default.isExecutableFile(atPath: installation + "/pg_dump") { return installation + "/pg_dump" }
        }
        throw PgDumpFailed(message: "pg_dump not found beside pg_ctl on PATH or in /usr/lib/postgresql/*/bin")
    }

    /// The dump without pg_dump's `\restrict` and `\unrestrict` lines, whose key is new on every run.
    static func run(_ arguments: [String], _ url: String) async throws -> String {
        let result = try await ChildProcess.run([try path()] + arguments + ["--dbname", url])
        guard result.code == 0 else { throw PgDumpFailed(message: result.stderr) }
        return result.stdout.split(separator: "\n", omittingEmptySubsequences: false)
            .filter { !$0.hasPrefix("\\restrict ") && !$0.hasPrefix("\\unrestrict ") }
            .joined(separator: "\n")
    }
}

private struct PgDumpFailed: Error { let message: String }

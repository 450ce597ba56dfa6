import Foundation

/// One `NNNN_name.sql` file.
public struct Migration: Sendable, Equatable {
    public let version: Int
    public let name: String
    public let sql: String

    public init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }

    /// A migration whose first line is `-- migrate: no-transaction` runs outside a transaction,
    /// one statement at a time: `CREATE INDEX CONCURRENTLY` refuses to run inside one (and a
    /// multi-statement query string is an implicit transaction too).
    public static let noTransactionMarker = "-- migrate: no-transaction"

    public var runsInTransaction: Bool {
        sql.split(separator: "\n", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces) } != Self.noTransactionMarker
    }

    /// The statements of a no-transaction migration: split at a `;` that ends a line outside
    /// quotes, comments and dollar-quoted bodies (`MigrationStatements`), so a `DO $$ … $$` block
    /// is one statement. Comment-only pieces are dropped.
    public var statements: [String] {
        MigrationStatements.split(sql).filter { piece in
            piece.split(separator: "\n").contains { line in
                let text = line.trimmingCharacters(in: .whitespaces)
                return !text.isEmpty && !text.hasPrefix("--")
            }
        }
    }

    /// FNV-1a of what PostgreSQL runs, to notice an applied migration whose statements were edited
    /// afterwards: `--` comments and blank lines outside quoted text do not count, so a header can
    /// be reworded without touching databases that applied the file. The no-transaction marker
    /// counts: it changes how the file runs.
    public var checksum: String {
        Self.fnv1a((runsInTransaction ? "" : Self.noTransactionMarker + "\n") + MigrationStatements.withoutComments(sql))
    }

    /// FNV-1a of every byte of the file: what earlier releases of `migrate` recorded, still
    /// accepted (`Migrator.matches`).
    var wholeFileChecksum: String { Self.fnv1a(sql) }

    private static func fnv1a(_ text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return String(hash, radix: 16)
    }
}

/// `baseline/NNNN_name.sql`: the schema that migrations 1 through NNNN build, as one file, for an
/// empty database.
public struct Baseline: Sendable, Equatable {
    /// The last migration it stands for.
    public let version: Int
    public let name: String
    public let sql: String

    public init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }
}

public struct MigrationError: Error, CustomStringConvertible, Sendable {
    public let description: String
}

/// Brings a database's `iap` schema up to date under a session advisory lock, so that any number
/// of processes may run `migrate` at once. An empty database gets the baseline in one transaction,
/// recorded as every migration it stands for; any other database, and every migration numbered
/// after the baseline, is migrated file by file, each file in its own transaction (or, when
/// marked, statement by statement outside one).
public struct Migrator: Sendable {
    /// Fixed advisory-lock key ("receipt-worker migrate").
    static let lockKey: Int64 = 0x7277_6d69_6772_6174
    public let migrations: [Migration]
    public let baseline: Baseline?

    public init(migrations: [Migration], baseline: Baseline? = nil) {
        self.migrations = migrations.sorted { $0.version < $1.version }
        self.baseline = baseline
    }

    /// The same migrations without the baseline: an empty database too is built file by file
    /// (the tests compare both ways).
    public var withoutBaseline: Migrator { Migrator(migrations: migrations) }

    /// Reads the `NNNN_name.sql` files of a folder (other files are ignored) and the baseline, if
    /// any: the one `NNNN_name.sql` file in its `baseline` subfolder, which stands for migrations
    /// 1 through NNNN (migration NNNN must be in the folder too).
    public init(directory: URL) throws {
        guard Self.isDirectory(directory) else {
            throw MigrationError(description: "migrations folder not found: \(directory.path)")
        }
        let migrations = try Self.readFiles(directory).map { Migration(version: $0.version, name: $0.name, sql: $0.sql) }
        guard !migrations.isEmpty else { throw MigrationError(description: "no migrations in \(directory.path)") }
        var baseline: Baseline? = nil
        let baselineFolder = directory.appendingPathComponent("baseline")
        if Self.isDirectory(baselineFolder) {
            let files = try Self.readFiles(baselineFolder)
            guard files.count <= 1 else {
                throw MigrationError(description: "more than one baseline in \(baselineFolder.path): "
                                     + files.map { Self.fileName($0.version, $0.name) }.joined(separator: ", "))
            }
            if let file = files.first {
                baseline = Baseline(version: file.version, name: file.name, sql: file.sql)
            }
        }
        self.init(migrations: migrations, baseline: baseline)
        try checkBaseline()
    }

    private static func readFiles(_ folder: URL) throws -> [(version: Int, name: String, sql: String)] {
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            .filter { $0.hasSuffix(".sql") && !isDirectory(folder.appendingPathComponent($0)) }
        var seen: [Int: String] = [:]
        var files: [(version: Int, name: String, sql: String)] = []
        for file in names {
            let stem = String(file.dropLast(4))
            guard let underscore = stem.firstIndex(of: "_"), let version = Int(stem[..<underscore]), version > 0 else {
                throw MigrationError(description: "migration file name must be NNNN_name.sql: \(file)")
            }
            if let other = seen[version] {
                throw MigrationError(description: "two migrations with version \(version): \(other), \(file)")
            }
            seen[version] = file
            let sql = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            files.append((version, String(stem[stem.index(after: underscore)...]), sql))
        }
        return files.sorted { $0.version < $1.version }
    }

    private static func fileName(_ version: Int, _ name: String) -> String {
        String(repeating: "0", count: max(0, 4 - String(version).count)) + "\(version)_\(name).sql"
    }

    private static func isDirectory(_ url: URL) -> Bool {
        var flag: ObjCBool = false
        return FileManager.default.fileExists(atPath: url.path, isDirectory: &flag) && flag.boolValue
    }

    /// A baseline stands for migrations in the folder (the one it is numbered after must be there)
    /// and runs in one transaction.
    private func checkBaseline() throws {
        guard let baseline else { return }
        guard migrations.contains(where: { $0.version == baseline.version }) else {
            throw MigrationError(description: "baseline \(Self.fileName(baseline.version, baseline.name)) stands for the migrations up to "
                                 + "\(baseline.version), which is not in the folder")
        }
        if Migration(version: baseline.version, name: baseline.name, sql: baseline.sql).runsInTransaction == false {
            throw MigrationError(description: "a baseline runs in one transaction: remove \(Migration.noTransactionMarker) from it")
        }
    }

    /// Applies what is missing; returns the versions applied by this call (through the baseline
    /// or file by file).
    @discardableResult
    public func migrate(_ connection: PostgresConnection) async throws -> [Int] {
        try await waitForLock(connection)
        do {
            let applied = try await apply(connection)
            _ = try await connection.query("SELECT pg_advisory_unlock($1)", Self.lockKey)
            return applied
        } catch {
            _ = try? await connection.query("SELECT pg_advisory_unlock($1)", Self.lockKey)
            throw error
        }
    }

    /// Polls with `pg_try_advisory_lock` instead of blocking in `pg_advisory_lock`: a process
    /// blocked inside a statement holds a snapshot, and `CREATE INDEX CONCURRENTLY` in the lock
    /// holder's session waits for every older snapshot to end, so a blocked waiter and the holder
    /// would wait on each other. Between polls the waiter holds nothing.
    private func waitForLock(_ connection: PostgresConnection) async throws {
        while try await !connection.query("SELECT pg_try_advisory_lock($1)", Self.lockKey)[0].decode(Bool.self, at: 0) {
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    private func apply(_ connection: PostgresConnection) async throws -> [Int] {
        try checkBaseline()
        try await connection.execute(script: """
            CREATE SCHEMA IF NOT EXISTS iap;
            CREATE TABLE IF NOT EXISTS iap.schema_migrations (
                version int PRIMARY KEY,
                name text NOT NULL,
                checksum text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            );
            """)
        let rows = try await connection.query("SELECT version, checksum FROM iap.schema_migrations")
        var done: [Int: String] = [:]
        for row in rows { done[try row.decode(Int.self, at: 0)] = try row.decode(String.self, at: 1) }
        var applied: [Int] = []
        if let baseline, done.isEmpty, try await schemaIsEmpty(connection) {
            let standsFor = migrations.filter { $0.version <= baseline.version }
            try await connection.transaction { tx in
                try await tx.execute(script: baseline.sql)
                for migration in standsFor { try await record(migration, on: tx) }
            }
            for migration in standsFor { done[migration.version] = migration.checksum }
            applied = standsFor.map(\.version)
        }
        for migration in migrations {
            if let checksum = done[migration.version] {
                if !Self.matches(recorded: checksum, migration) {
                    throw MigrationError(description: "migration \(migration.version)_\(migration.name) was changed after it was applied")
                }
                continue
            }
            if migration.runsInTransaction {
                try await connection.transaction { tx in
                    try await tx.execute(script: migration.sql)
                    try await record(migration, on: tx)
                }
            } else {
                // Recorded only once every statement succeeded, so such a migration must be safe
                // to run again from the top (DROP INDEX CONCURRENTLY IF EXISTS before each build).
                for statement in migration.statements { try await connection.execute(script: statement) }
                try await record(migration, on: connection)
            }
            applied.append(migration.version)
        }
        return applied
    }

    /// Empty: nothing recorded (checked by the caller) and nothing in the `iap` schema but
    /// iap.schema_migrations. Every object in a schema depends on it in pg_depend, whatever its
    /// kind; a database holding anything else there is migrated file by file. Decided under the
    /// advisory lock, so one process applies the baseline and the others then find it recorded.
    private func schemaIsEmpty(_ connection: PostgresConnection) async throws -> Bool {
        try await connection.query("""
            SELECT NOT EXISTS (
                SELECT 1 FROM pg_depend
                WHERE refclassid = 'pg_namespace'::regclass AND refobjid = 'iap'::regnamespace
                  AND NOT (classid = 'pg_class'::regclass AND objid = 'iap.schema_migrations'::regclass))
            """)[0].decode(Bool.self, at: 0)
    }

    /// A recorded checksum matches the file when it is the file's checksum, or the whole-file
    /// checksum of the file as it is or as it was before only its comments were edited.
    static func matches(recorded: String, _ migration: Migration) -> Bool {
        recorded == migration.checksum || recorded == migration.wholeFileChecksum
            || MigrationChecksums.wholeFileBeforeCommentEdits[migration.version].map { $0 == (migration.name, recorded) } == true
    }

    private func record(_ migration: Migration, on connection: PostgresConnection) async throws {
        _ = try await connection.query("INSERT INTO iap.schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
                                       migration.version, migration.name, migration.checksum)
    }
}

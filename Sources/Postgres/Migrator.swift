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

public struct MigrationError: Error, CustomStringConvertible, Sendable {
    public let description: String
}

/// Applies migrations in order, each in its own transaction (or, when marked, statement by
/// statement outside one), under a session advisory lock so that any number of processes may
/// run `migrate` at once.
public struct Migrator: Sendable {
    /// Fixed advisory-lock key ("receipt-worker migrate").
    static let lockKey: Int64 = 0x7277_6d69_6772_6174
    public let migrations: [Migration]

    public init(migrations: [Migration]) { self.migrations = migrations.sorted { $0.version < $1.version } }

    /// Reads `NNNN_name.sql` files from a folder; other files are ignored.
    public init(directory: URL) throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw MigrationError(description: "migrations folder not found: \(directory.path)")
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".sql") }
        var seen: [Int: String] = [:]
        var migrations: [Migration] = []
        for file in names {
            let stem = String(file.dropLast(4))
            guard let underscore = stem.firstIndex(of: "_"), let version = Int(stem[..<underscore]), version > 0 else {
                throw MigrationError(description: "migration file name must be NNNN_name.sql: \(file)")
            }
            if let other = seen[version] {
                throw MigrationError(description: "two migrations with version \(version): \(other), \(file)")
            }
            seen[version] = file
            let sql = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
            migrations.append(Migration(version: version, name: String(stem[stem.index(after: underscore)...]), sql: sql))
        }
        guard !migrations.isEmpty else { throw MigrationError(description: "no migrations in \(directory.path)") }
        self.init(migrations: migrations)
    }

    /// Applies what is missing; returns the versions applied by this call.
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

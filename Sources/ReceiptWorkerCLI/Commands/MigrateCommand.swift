import Postgres

enum MigrateCommand {
    static let spec = CommandSpec(
        name: "migrate",
        summary: "Create or upgrade the iap schema under an advisory lock: an empty database gets Migrations/baseline, "
            + "any other the Migrations/NNNN_name.sql files it lacks, in order; a second run is a no-op.",
        usage: "migrate [--database-url URL] [--migrations DIR]",
        settings: Settings.database + [Settings.migrationsDir, Settings.migrateCallTimeout] + Settings.logging)

    static func run(_ runtime: Runtime) async throws -> Int32 {
        let migrator = try loadMigrator(runtime)
        // No call deadline by default: CREATE INDEX CONCURRENTLY on a production-size
        // table outlasts any deadline meant for the hot path. Connect deadline and keepalives still apply.
        let limit = runtime.options.seconds(Settings.migrateCallTimeout)
        let client = try await runtime.connectDatabase(maxConnections: 1, applicationName: "receipt-worker-migrate",
                                                       callTimeout: limit > 0 ? limit : .infinity)
        // The migration lock is a session advisory lock: through transaction pooling it would
        // be taken on one server connection and the migrations run on others.
        if try await PoolingProbe.isTransactionPooling(client.configuration) {
            await client.close()
            throw UsageError("DATABASE_URL leads through PgBouncer in transaction pooling mode; migrate needs a session: "
                             + "point it at PostgreSQL directly (or at a session-pooling port)")
        }
        let applied: [Int]
        do {
            applied = try await client.withConnection { try await migrator.migrate($0) }
        } catch {
            await client.close()
            throw error
        }
        await client.close()
        runtime.logger.info("migrated", ["applied": .int(applied.count), "latest": .int(migrator.migrations.last?.version ?? 0)])
        return 0
    }

    static func loadMigrator(_ runtime: Runtime) throws -> Migrator {
        let folder = try MigrationsLocator.find(runtime.options.string(Settings.migrationsDir))
        do {
            return try Migrator(directory: folder)
        } catch let error as MigrationError {
            throw UsageError(error.description)
        }
    }
}

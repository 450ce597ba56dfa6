import EmbeddedPostgres
import Foundation
import Observability
import Workloads

/// The embedded default: with no DATABASE_URL, a private throw-away PostgreSQL that is
/// removed when the command ends (also on Ctrl-C, and by a watchdog if we are killed).
enum EmbeddedDatabase {
    static func withDatabase<T: Sendable>(
        _ runtime: Runtime, durable: Bool = false, statementStatistics: Bool = false, _ body: @Sendable (String, PrivateCluster?) async throws -> T
    ) async throws -> T {
        if let url = runtime.options.string(Settings.databaseURL) { return try await body(url, nil) }
        var options = PrivateCluster.Options()
        options.durable = durable
        options.statementStatistics = statementStatistics
        let cluster: PrivateCluster
        do {
            cluster = try await PrivateCluster.start(options)
        } catch {
            throw UsageError("cannot start the private PostgreSQL: \(error)")
        }
        runtime.logger.info("private_postgres_started", ["port": .int(cluster.port), "dir": .string(cluster.directory)])
        // Ctrl-C or SIGTERM: stop spawned workers, remove the cluster, then leave.
        let watcher = SignalWatcher()
        let cleanup = Task.detached {
            for await _ in watcher.signals {
                WorkerSpawner.killAll()
                cluster.stop()
                exit(130)
            }
        }
        defer {
            cleanup.cancel()
            watcher.cancel()
            cluster.stop()
            runtime.logger.info("private_postgres_removed", [:])
        }
        return try await body(cluster.url, cluster)
    }
}

import EmbeddedPostgres
import Foundation
import Postgres

/// A real PostgreSQL for tests: a private throw-away cluster started once per test
/// process, or the server at `TEST_DATABASE_URL`. Every test gets its own database.
public enum TestDatabase {
    /// The repository's Migrations/ folder.
    public static let migrationsDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Migrations")

    /// A new, empty database (migrated unless told otherwise); returns its URL.
    public static func fresh(migrated: Bool = true) async throws -> String {
        let server = try await TestServer.shared.server()
        let name = "t_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(20).lowercased())"
        let admin = try await PostgresConnection.connect(server.adminURL)
        _ = try await admin.query("CREATE DATABASE \(name)")   // identifier made above, not user input
        await admin.close()
        let url = server.url(name)
        if migrated {
            let connection = try await PostgresConnection.connect(url)
            try await Migrator(directory: migrationsDirectory).migrate(connection)
            await connection.close()
        }
        return url
    }

    /// The private cluster, when tests run on one (nil with TEST_DATABASE_URL).
    public static func privateCluster() async throws -> PrivateCluster? {
        try await TestServer.shared.server().cluster
    }

    /// The distribution's PgBouncer in front of the private cluster (one per pool mode and test
    /// process); nil with TEST_DATABASE_URL.
    public static func pgBouncer(_ mode: PrivatePgBouncer.PoolMode = .transaction) async throws -> PrivatePgBouncer? {
        guard let cluster = try await privateCluster() else { return nil }
        return try await TestServer.shared.pgBouncer(mode, cluster: cluster)
    }
}

struct ServerHandle: Sendable {
    let adminURL: String
    let cluster: PrivateCluster?
    func url(_ database: String) -> String {
        if let cluster { return cluster.url(database: database) }
        return DatabaseURL.replacingDatabase(in: adminURL, with: database)
    }
}

actor TestServer {
    static let shared = TestServer()
    private var handle: ServerHandle?
    private var bouncers: [PrivatePgBouncer.PoolMode: PrivatePgBouncer] = [:]

    func pgBouncer(_ mode: PrivatePgBouncer.PoolMode, cluster: PrivateCluster) async throws -> PrivatePgBouncer {
        if let running = bouncers[mode] { return running }
        let started = try await PrivatePgBouncer.start(inFrontOf: cluster, poolMode: mode)
        bouncers[mode] = started
        atexit_bouncers.append(started)
        return started
    }

    func server() async throws -> ServerHandle {
        if let handle { return handle }
        let made: ServerHandle
        if let url = ProcessInfo.processInfo.environment["TEST_DATABASE_URL"], !url.isEmpty {
            made = ServerHandle(adminURL: url, cluster: nil)
        } else {
            let cluster = try await PrivateCluster.start()
            atexit_cluster = cluster
            atexit {
                atexit_bouncers.forEach { $0.stop() }
                atexit_cluster?.stop()
            }
            made = ServerHandle(adminURL: cluster.url, cluster: cluster)
        }
        handle = made
        return made
    }
}

/// Read only by the process-exit hook.
nonisolated(unsafe) private var atexit_cluster: PrivateCluster?
nonisolated(unsafe) private var atexit_bouncers: [PrivatePgBouncer] = []

enum DatabaseURL {
    /// Points a libpq URL or key=value conninfo at another database.
    static func replacingDatabase(in conninfo: String, with database: String) -> String {
        if conninfo.hasPrefix("postgres://") || conninfo.hasPrefix("postgresql://"),
           var components = URLComponents(string: conninfo) {
            components.path = "/" + database
            return components.string ?? conninfo
        }
        return conninfo + " dbname=\(database)"
    }
}

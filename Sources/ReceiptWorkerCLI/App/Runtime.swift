import Foundation
import Observability
import Postgres

/// What every command gets: its checked options, a logger, the environment.
struct Runtime: Sendable {
    let options: CommandLineOptions
    let logger: Logger
    let environment: [String: String]
    /// One budget for the process's `db_notice` lines, whichever session they come from.
    private let noticeLimiter = LogRateLimiter(limit: 20, window: 60)

    /// `logSink`: stdout, where every command logs, unless its stdout carries a document (`reconcile --json`).
    init(options: CommandLineOptions, environment: [String: String], secrets: [String] = [], logSink: any LogSink = StandardOutputSink()) {
        self.options = options
        self.environment = environment
        let level = LogLevel(parsing: options.string(Settings.logLevel) ?? "info") ?? .info
        let format = LogFormat(parsing: options.string(Settings.logFormat) ?? "logfmt") ?? .logfmt
        var known = secrets
        for setting in [Settings.databaseURL, Settings.databaseListenURL, Settings.alertWebhookURL] {
            if let value = options.string(setting) { known.append(value) }
        }
        // Secrets given directly or through their *_FILE setting; an unreadable file is
        // reported by the command that needs it, not here.
        for (setting, file) in [(Settings.sharedSecret, Settings.sharedSecretFile), (Settings.ingestToken, Settings.ingestTokenFile)] {
            if let value = try? options.secret(setting, file: file) { known.append(value) }
        }
        logger = Logger(minimumLevel: level, format: format, sink: logSink, redactor: Redactor(secrets: known))
    }

    /// The database URL, required.
    func databaseURL() throws -> String { try options.require(Settings.databaseURL) }

    /// How this command's connections behave: deadlines, prepared statements, limits.
    func databaseConfiguration(url: String? = nil, applicationName: String, observer: (any PostgresCallObserver)? = nil) throws -> PostgresConfiguration {
        var configuration = PostgresConfiguration(conninfo: try url ?? databaseURL(), applicationName: applicationName)
        configuration.callTimeout = options.seconds(Settings.databaseCallTimeout)
        configuration.connectTimeout = options.seconds(Settings.databaseConnectTimeout)
        configuration.idleInTransactionTimeout = options.seconds(Settings.databaseIdleInTransactionTimeout)
        configuration.preparedStatements = PostgresConfiguration.PreparedStatements(
            rawValue: options.string(Settings.databasePreparedStatements) ?? "auto") ?? .auto
        configuration.observer = observer
        configuration.noticeHandler = { [logger, noticeLimiter] notice in
            // Below WARNING (e.g. "already exists, skipping" during migrate) is detail for debugging.
            let level: LogLevel = notice.isWarningOrWorse ? (notice.severity == "WARNING" ? .warning : .error) : .debug
            guard logger.isEnabled(level), let suppressed = noticeLimiter.admit() else { return }
            logger.log(level, "db_notice", ["severity": .string(notice.severity), "sqlstate": .string(notice.sqlState ?? ""),
                                            "message": .string(notice.message), "suppressed": .int(suppressed)])
        }
        // A multi-host URL: where this process's sessions now go first (the first one at info, a change at notice).
        configuration.preferredHostHandler = { [logger] change in
            let fields: KeyValuePairs<String, LogValue> = [
                "host": .string(change.host), "previous": .string(change.previous ?? ""),
                "cooling_down": .string(change.coolingDown.joined(separator: ",")), "application_name": .string(change.applicationName),
            ]
            if change.previous == nil { logger.info("db_host_preferred", fields) } else { logger.notice("db_host_preferred", fields) }
        }
        return configuration
    }

    /// `DATABASE_POOL_SIZE`: the most pooled connections this process opens.
    var databasePoolSize: Int { max(1, options.int(Settings.databasePoolSize)) }

    /// The LISTEN session's URL: DATABASE_LISTEN_URL, else DATABASE_URL; nil when it is `off` (poll only).
    func databaseListenURL() throws -> String? {
        let value = try options.string(Settings.databaseListenURL) ?? databaseURL()
        return value == "off" ? nil : value
    }

    /// A pool of at most `DATABASE_POOL_SIZE` connections (or `maxConnections` when a command needs fewer).
    /// `callTimeout` replaces DATABASE_CALL_TIMEOUT_SECONDS (`.infinity`: no call deadline).
    func databaseClient(applicationName: String, maxConnections: Int? = nil, observer: (any PostgresCallObserver)? = nil,
                        callTimeout: Double? = nil) throws -> PostgresClient {
        var configuration = try databaseConfiguration(applicationName: applicationName, observer: observer)
        if let callTimeout { configuration.callTimeout = callTimeout }
        return PostgresClient(configuration: configuration, maxConnections: min(maxConnections ?? databasePoolSize, databasePoolSize))
    }

    /// Opens a pool and checks that the server answers: a bad URL or an unreachable
    /// server is a configuration error (exit 2) for one-shot commands.
    func connectDatabase(maxConnections: Int? = nil, applicationName: String = "receipt-worker",
                         observer: (any PostgresCallObserver)? = nil, callTimeout: Double? = nil) async throws -> PostgresClient {
        let client = try databaseClient(applicationName: applicationName, maxConnections: maxConnections, observer: observer,
                                        callTimeout: callTimeout)
        do {
            _ = try await client.query("SELECT 1")
        } catch let error as PostgresError {
            throw UsageError("DATABASE_URL: \(error.message)")
        }
        return client
    }
}

/// Where the migrations are: the flag or MIGRATIONS_DIR, else ./Migrations, else a
/// Migrations folder beside or above the binary (a build tree or an installed share folder).
enum MigrationsLocator {
    static func find(_ explicit: String?) throws -> URL {
        if let explicit {
            let url = URL(fileURLWithPath: explicit)
            guard isDirectory(url) else { throw UsageError("MIGRATIONS_DIR (--migrations): folder not found: \(explicit)") }
            return url
        }
        var candidates = [URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent("Migrations")]
        var folder = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<6 {
            candidates.append(folder.appendingPathComponent("Migrations"))
            folder = folder.deletingLastPathComponent()
        }
        candidates.append(URL(fileURLWithPath: "/usr/share/receipt-worker/Migrations"))
        guard let found = candidates.first(where: isDirectory) else {
            throw UsageError("migrations folder not found (looked for ./Migrations and beside the binary); pass --migrations DIR")
        }
        return found
    }

    private static func isDirectory(_ url: URL) -> Bool {
        var flag: ObjCBool = false
        return FileManager.default.fileExists(atPath: url.path, isDirectory: &flag) && flag.boolValue
    }
}

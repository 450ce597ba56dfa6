import Foundation
import Observability
import Postgres

/// What every command gets: its checked options, a logger, the environment.
struct Runtime: Sendable {
    let options: CommandLineOptions
    let logger: Logger
    let environment: [String: String]

    init(options: CommandLineOptions, environment: [String: String], secrets: [String] = []) {
        self.options = options
        self.environment = environment
        let level = LogLevel(parsing: options.string(Settings.logLevel) ?? "info") ?? .info
        let format = LogFormat(parsing: options.string(Settings.logFormat) ?? "logfmt") ?? .logfmt
        var known = secrets
        for setting in [Settings.databaseURL, Settings.alertWebhookURL] {
            if let value = options.string(setting) { known.append(value) }
        }
        // Secrets given directly or through their *_FILE setting; an unreadable file is
        // reported by the command that needs it, not here.
        for (setting, file) in [(Settings.sharedSecret, Settings.sharedSecretFile), (Settings.ingestToken, Settings.ingestTokenFile)] {
            if let value = try? options.secret(setting, file: file) { known.append(value) }
        }
        logger = Logger(minimumLevel: level, format: format, sink: StandardOutputSink(), redactor: Redactor(secrets: known))
    }

    /// The database URL, required.
    func databaseURL() throws -> String { try options.require(Settings.databaseURL) }

    /// Opens a pool and checks that the server answers: a bad URL or an unreachable
    /// server is a configuration error (exit 2) for one-shot commands.
    func connectDatabase(maxConnections: Int = 4, applicationName: String = "receipt-worker") async throws -> PostgresClient {
        let client = PostgresClient(conninfo: try databaseURL(), maxConnections: maxConnections, applicationName: applicationName)
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

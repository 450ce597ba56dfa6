import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A private, throw-away PostgreSQL cluster: `initdb` into a temp folder, `pg_ctl start`
/// on a free loopback port, removed by `stop()`. A watchdog process removes it too if
/// this process dies without stopping it. As root, the server runs as the `postgres` user
/// (PostgreSQL refuses to run as root).
public final class PrivateCluster: Sendable {
    public struct Options: Sendable {
        /// Throw-away data: skip fsync for speed. Benchmarks say so when they print figures.
        public var durable = false
        public var maxConnections = 300
        /// pg_stat_statements loaded (benchmarks: where the server's time goes, statement by statement).
        public var statementStatistics = false
        public init() {}
    }

    public let directory: String
    public let port: Int
    /// A libpq URL for the `postgres` database as the `postgres` superuser.
    public var url: String { url(database: "postgres") }

    private let binaries: PostgresBinaries
    /// The prefix that runs a server program as `postgres` when we are root.
    let runAs: [String]
    private let watchdog: pid_t

    public func url(database: String) -> String {
        "postgresql://postgres@127.0.0.1:\(port)/\(database)?sslmode=disable&connect_timeout=5"
    }

    public static func start(_ options: Options = Options()) async throws -> PrivateCluster {
        try await CommandRunner.offPool { try PrivateCluster(options) }
    }

    private init(_ options: Options) throws {
        binaries = try PostgresBinaries.locate()
        let folder = try ServerFolder(prefix: "receipt-worker-pg")
        directory = folder.path
        runAs = folder.runAs
        let data = directory + "/data"
        do {
            try CommandRunner.run(runAs + [binaries.initdb, "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8",
                                           "--locale=C", "--no-sync", "--no-instructions"])
            var lastError: Error?
            var started: Int?
            for _ in 0..<5 where started == nil {
                let candidate = try Self.freePort()
                do {
                    try CommandRunner.run(runAs + [binaries.pgCtl, "start", "-w", "-t", "60", "-D", data, "-l", directory + "/server.log",
                                                   "-o", Self.serverOptions(port: candidate, socketDirectory: directory, options)])
                    started = candidate
                } catch {
                    lastError = error
                }
            }
            guard let started else { throw lastError ?? CommandError(description: "postgres did not start") }
            port = started
        } catch {
            _ = try? CommandRunner.run(["/bin/rm", "-rf", directory])
            throw error
        }
        watchdog = try Self.startWatchdog(directory: directory, stopCommand: runAs + [binaries.pgCtl, "stop", "-D", data, "-m", "immediate"])
    }

    /// `pg_ctl restart -m fast`: every client connection is cut, as in a real failover.
    public func restart() async throws {
        let command = runAs + [binaries.pgCtl, "restart", "-w", "-t", "60", "-m", "fast", "-D", directory + "/data",
                               "-l", directory + "/server.log"]
        _ = try await CommandRunner.offPool { try CommandRunner.run(command) }
    }

    /// Stops the server and removes its folder. Synchronous so it can run at process exit.
    public func stop() {
        kill(watchdog, SIGTERM)
        var status: Int32 = 0
        waitpid(watchdog, &status, 0)
        _ = try? CommandRunner.run(runAs + [binaries.pgCtl, "stop", "-w", "-D", directory + "/data", "-m", "fast"])
        _ = try? CommandRunner.run(["/bin/rm", "-rf", directory])
    }

    private static func serverOptions(port: Int, socketDirectory: String, _ options: Options) -> String {
        var settings = [
            "-p \(port)", "-c listen_addresses=127.0.0.1", "-c unix_socket_directories=\(socketDirectory)",
            "-c max_connections=\(options.maxConnections)", "-c shared_buffers=128MB",
        ]
        if !options.durable {
            settings += ["-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off"]
        }
        if options.statementStatistics { settings.append("-c shared_preload_libraries=pg_stat_statements") }
        return settings.joined(separator: " ")
    }

    /// Asks the kernel for a free loopback port (also used by tests that start servers of their own).
    public static func freePort() throws -> Int {
        guard let (fd, port) = LoopbackSocket.bound() else { throw CommandError(description: "cannot find a free port") }
        close(fd)
        return port
    }

    /// A detached shell that waits for this process to end, then stops the server and
    /// deletes the folder: no cluster outlives a crashed or killed test run.
    static func startWatchdog(directory: String, stopCommand: [String]) throws -> pid_t {
        let quoted = stopCommand.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        let script = "while kill -0 \(getpid()) 2>/dev/null && [ -d '\(directory)' ]; do sleep 1; done; "
            + "\(quoted) >/dev/null 2>&1; rm -rf '\(directory)'"
        return try CommandRunner.spawn(["/bin/sh", "-c", script], ownProcessGroup: true)
    }
}

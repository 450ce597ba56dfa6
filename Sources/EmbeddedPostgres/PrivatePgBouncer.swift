import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The distribution's PgBouncer in front of a private cluster, for tests and benchmarks of
/// the pooled deployment. Trust authentication on loopback; every database name
/// is passed through to the cluster.
public final class PrivatePgBouncer: Sendable {
    public enum PoolMode: String, Sendable { case session, transaction }

    public let port: Int
    public let poolMode: PoolMode
    private let directory: String
    private let watchdog: pid_t

    /// A libpq URL for `database` through the pooler.
    public func url(database: String) -> String {
        "postgresql://postgres@127.0.0.1:\(port)/\(database)?sslmode=disable&connect_timeout=5"
    }

    /// Turns a URL of the cluster into the same URL through the pooler.
    public func url(replacingIn clusterURL: String) -> String {
        guard var components = URLComponents(string: clusterURL) else { return clusterURL }
        components.port = port
        return components.string ?? clusterURL
    }

    public static func start(inFrontOf cluster: PrivateCluster, poolMode: PoolMode = .transaction, poolSize: Int = 20) async throws -> PrivatePgBouncer {
        try await CommandRunner.offPool { try PrivatePgBouncer(cluster: cluster, poolMode: poolMode, poolSize: poolSize) }
    }

    static func locate() throws -> String {
        let folders = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init) + ["/usr/sbin", "/usr/bin"]
        guard let found = folders.map({ $0 + "/pgbouncer" }).first(where: FileManager.default.isExecutableFile(atPath:)) else {
            throw CommandError(description: "pgbouncer not found on PATH or in /usr/sbin; install the pgbouncer package")
        }
        return found
    }

    private init(cluster: PrivateCluster, poolMode: PoolMode, poolSize: Int) throws {
        let binary = try Self.locate()
        var template = Array("/tmp/receipt-worker-pgbouncer.XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw CommandError(description: "cannot create a temp folder in /tmp") }
        directory = String(cString: made)
        self.poolMode = poolMode
        if let user = getpwnam("postgres"), getuid() == 0 { chown(directory, user.pointee.pw_uid, user.pointee.pw_gid) }
        // PgBouncer refuses to run as root: it runs as the cluster's user.
        let runAs = cluster.runAs
        var lastError: Error?
        var started: Int?
        for _ in 0..<5 where started == nil {
            let candidate = try PrivateCluster.freePort()
            let config = Self.configuration(port: candidate, clusterPort: cluster.port, directory: directory,
                                            poolMode: poolMode, poolSize: poolSize)
            do {
                try config.write(toFile: directory + "/pgbouncer.ini", atomically: true, encoding: .utf8)
                try "\"postgres\" \"\"\n".write(toFile: directory + "/users.txt", atomically: true, encoding: .utf8)
                if let user = getpwnam("postgres"), getuid() == 0 {
                    for file in ["/pgbouncer.ini", "/users.txt"] { chown(directory + file, user.pointee.pw_uid, user.pointee.pw_gid) }
                }
                try CommandRunner.run(runAs + [binary, "-d", directory + "/pgbouncer.ini"])
                try Self.waitUntilListening(port: candidate)
                started = candidate
            } catch {
                lastError = error
                Self.stopDaemon(directory: directory)
            }
        }
        guard let started else {
            _ = try? CommandRunner.run(["/bin/rm", "-rf", directory])
            throw lastError ?? CommandError(description: "pgbouncer did not start")
        }
        port = started
        let stop = "[ -f '\(directory)/pgbouncer.pid' ] && kill $(cat '\(directory)/pgbouncer.pid')"
        watchdog = try PrivateCluster.startWatchdog(directory: directory, stopCommand: ["/bin/sh", "-c", stop])
    }

    /// Stops PgBouncer and removes its folder.
    public func stop() {
        kill(watchdog, SIGTERM)
        var status: Int32 = 0
        waitpid(watchdog, &status, 0)
        Self.stopDaemon(directory: directory)
        _ = try? CommandRunner.run(["/bin/rm", "-rf", directory])
    }

    private static func stopDaemon(directory: String) {
        guard let text = try? String(contentsOfFile: directory + "/pgbouncer.pid", encoding: .utf8),
              let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)) else { return }
        kill(pid, SIGTERM)
        for _ in 0..<100 where kill(pid, 0) == 0 { usleep(20_000) }
    }

    private static func waitUntilListening(port: Int) throws {
        for _ in 0..<250 {
            if let fd = LoopbackSocket.connected(port: port) {
                close(fd)
                return
            }
            usleep(20_000)
        }
        throw CommandError(description: "pgbouncer is not listening on port \(port)")
    }

    private static func configuration(port: Int, clusterPort: Int, directory: String, poolMode: PoolMode, poolSize: Int) -> String {
        """
        [databases]
        * = host=127.0.0.1 port=\(clusterPort)

        [pgbouncer]
        listen_addr = 127.0.0.1
        listen_port = \(port)
        unix_socket_dir =
        auth_type = trust
        auth_file = \(directory)/users.txt
        pool_mode = \(poolMode.rawValue)
        default_pool_size = \(poolSize)
        max_client_conn = 5000
        max_db_connections = \(poolSize)
        server_reset_query = DISCARD ALL
        server_reset_query_always = 0
        ignore_startup_parameters = extra_float_digits
        logfile = \(directory)/pgbouncer.log
        pidfile = \(directory)/pgbouncer.pid
        admin_users = postgres

        """
    }
}

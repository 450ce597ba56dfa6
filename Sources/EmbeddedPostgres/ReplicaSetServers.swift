import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// How a replica set's servers are made: data folders and options per slot, a standby built
/// from a base backup, psql for the few statements the harness itself runs.
extension PrivateReplicaSet {
    func dataDirectory(_ slot: Slot) -> String { directory + (slot == .a ? "/a" : "/b") }
    func logPath(_ slot: Slot) -> String { directory + (slot == .a ? "/a.log" : "/b.log") }

    func startServer(_ slot: Slot) throws {
        do {
            try CommandRunner.run(runAs + [binaries.pgCtl, "start", "-w", "-t", "60", "-D", dataDirectory(slot), "-l", logPath(slot),
                                           "-o", serverOptions(slot)])
        } catch {
            // The server's own words say why; the folder is gone once the caller stops the set.
            let log = (try? String(contentsOfFile: logPath(slot), encoding: .utf8)) ?? ""
            let tail = log.split(separator: "\n").suffix(3).joined(separator: " | ")
            throw CommandError(description: "slot \(slot) did not start: \(error) | \(tail)")
        }
    }

    /// Base backup through a new replication proxy in front of `primary`, started as a hot standby.
    func buildStandby(in slot: Slot, from primary: Slot) throws {
        let proxy = try FaultProxy(targetPort: port(primary))
        let previous = state.withLock { state -> FaultProxy? in
            defer { state.replicationProxy = proxy }
            return state.replicationProxy
        }
        previous?.stop()
        let conninfo = "host=127.0.0.1 port=\(proxy.port) user=postgres application_name=slot_\(slot)"
        try CommandRunner.run(runAs + [binaries.pgBasebackup, "-D", dataDirectory(slot), "-d", conninfo, "-R",
                                       "-X", "stream", "-c", "fast", "--no-sync"])
        try dropSynchronousSetting(slot)
        try startServer(slot)
        try waitUntil("standby streaming") { try psql(primary, "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'") != "0" }
        state.withLock { $0.standby = slot }
        if options.synchronous {
            // ALTER SYSTEM cannot share a transaction with the reload: two calls.
            try psql(primary, "ALTER SYSTEM SET synchronous_standby_names = '*'")
            try psql(primary, "SELECT pg_reload_conf()")
        }
    }

    /// The base backup copied the primary's `postgresql.auto.conf`; a standby that inherited
    /// `synchronous_standby_names` would, once promoted, wait forever for a standby it lacks.
    func dropSynchronousSetting(_ slot: Slot) throws {
        let path = dataDirectory(slot) + "/postgresql.auto.conf"
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return }
        let kept = text.split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.contains("synchronous_standby_names") }
        // Not atomically: the file stays the postgres user's.
        try kept.joined(separator: "\n").write(toFile: path, atomically: false, encoding: .utf8)
    }

    func serverOptions(_ slot: Slot) -> String {
        var settings = [
            "-p \(port(slot))", "-c listen_addresses=127.0.0.1", "-c unix_socket_directories=\(directory)",
            "-c max_connections=\(options.maxConnections)", "-c shared_buffers=64MB",
            "-c wal_level=replica", "-c max_wal_senders=5", "-c wal_keep_size=512MB", "-c hot_standby=on",
            // A standby whose primary restarted reconnects within a second, not five.
            "-c wal_retrieve_retry_interval=1s", "-c wal_receiver_status_interval=1s",
        ]
        // synchronous_commit stays on: with it off a synchronous standby would not be waited for.
        if !options.durable { settings += ["-c fsync=off", "-c full_page_writes=off"] }
        return settings.joined(separator: " ")
    }

    /// One fixed statement through psql as the superuser; its unaligned output, trimmed.
    @discardableResult
    func psql(_ slot: Slot, _ sql: String, database: String = "postgres") throws -> String {
        try CommandRunner.run([binaries.psql, "-X", "-A", "-t", "-h", "127.0.0.1", "-p", "\(port(slot))", "-U", "postgres",
                               "-d", database, "-c", sql]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func waitUntil(_ what: String, within seconds: Double = 60, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if (try? condition()) == true { return }
            usleep(100_000)
        }
        throw CommandError(description: "replica set: \(what): not after \(Int(seconds)) s")
    }

    /// What the watchdog runs: SIGKILL to both slots' servers and their children (stopped or not).
    static func killScript(_ directory: String) -> String {
        ["a", "b"].map { slot in
            "p=$(head -n 1 '\(directory)/\(slot)/postmaster.pid' 2>/dev/null) && [ -n \"$p\" ] && { pkill -KILL -P \"$p\"; kill -KILL \"$p\"; }"
        }.joined(separator: "; ") + "; [ -f '\(directory)/fenced.pids' ] && kill -KILL $(cat '\(directory)/fenced.pids')"
    }
}

/// initdb, pg_ctl, pg_basebackup and psql from the same PostgreSQL installation.
struct ReplicaBinaries {
    let initdb: String
    let pgCtl: String
    let pgBasebackup: String
    let psql: String

    static func locate() throws -> ReplicaBinaries {
        let server = try PostgresBinaries.locate()
        // PATH may hold only links to initdb and pg_ctl: their installation's folder has the rest.
        let folder = URL(fileURLWithPath: server.pgCtl).resolvingSymlinksInPath().deletingLastPathComponent().path
        let basebackup = folder + "/pg_basebackup", psql = folder + "/psql"
        guard FileManager.default.isExecutableFile(atPath: basebackup), FileManager.default.isExecutableFile(atPath: psql) else {
            throw CommandError(description: "pg_basebackup and psql not found next to \(server.pgCtl); install the postgresql package")
        }
        return ReplicaBinaries(initdb: server.initdb, pgCtl: server.pgCtl, pgBasebackup: basebackup, psql: psql)
    }
}

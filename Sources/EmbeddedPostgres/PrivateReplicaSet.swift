import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A private primary with a streaming standby, for failover drills and `bench nemesis`.
///
/// Two slots, A and B, each with a loopback port fixed for the life of the set, so one
/// multi-host URL (`url(database:)`, `target_session_attrs=read-write`) stays valid across
/// any number of failovers: whichever slot holds the primary, the other holds the standby
/// (or nothing, between a fence and a rebuild). The standby replicates through a
/// `FaultProxy`, so a drill can freeze replication and make an asynchronous standby fall behind.
/// As root the servers run as the `postgres` user. `stop()` removes everything; a watchdog
/// does too if this process dies first.
public final class PrivateReplicaSet: Sendable {
    public struct Options: Sendable {
        /// `synchronous_standby_names='*'` on the current primary: a commit is acknowledged only
        /// once the standby has it, so a failover loses nothing.
        public var synchronous = true
        /// false: `fsync=off` (throw-away data; a process crash still loses nothing, the OS has the pages).
        public var durable = false
        public var maxConnections = 200
        public init(synchronous: Bool = true, durable: Bool = false) {
            self.synchronous = synchronous
            self.durable = durable
        }
    }

    public enum Slot: Int, Sendable, CustomStringConvertible {
        case a = 0, b = 1
        public var other: Slot { self == .a ? .b : .a }
        public var description: String { self == .a ? "A" : "B" }
    }

    public let directory: String
    public let options: Options
    let ports: [Int]
    let binaries: ReplicaBinaries
    let runAs: [String]
    let state: Mutex<State>
    private let watchdog: pid_t

    struct State {
        var primary: Slot = .a
        /// nil between a failover and `rebuildStandby()`.
        var standby: Slot? = .b
        /// The slot that held the primary before `promoteStandby()`, until fenced.
        var formerPrimary: Slot?
        /// Processes stopped by `hangPrimary()`, until resumed or fenced.
        var hung: [pid_t] = []
        /// A fenced hung primary's processes: stopped for good, SIGKILLed when the slot is rebuilt.
        var fencedHung: [pid_t] = []
        var replicationProxy: FaultProxy?
    }

    public static func start(_ options: Options = Options()) async throws -> PrivateReplicaSet {
        try await CommandRunner.offPool { try PrivateReplicaSet(options) }
    }

    private init(_ options: Options) throws {
        self.options = options
        binaries = try ReplicaBinaries.locate()
        let folder = try ServerFolder(prefix: "receipt-worker-pgrs")
        directory = folder.path
        runAs = folder.runAs
        ports = [try PrivateCluster.freePort(), try PrivateCluster.freePort()]
        state = Mutex(State())
        watchdog = try PrivateCluster.startWatchdog(directory: directory, stopCommand: ["/bin/sh", "-c", Self.killScript(directory)])
        do {
            try CommandRunner.run(runAs + [binaries.initdb, "-D", dataDirectory(.a), "-U", "postgres", "-A", "trust", "-E", "UTF8",
                                           "--locale=C", "--no-sync", "--no-instructions"])
            try startServer(.a)
            try buildStandby(in: .b, from: .a)
        } catch {
            stop()
            throw error
        }
    }

    // MARK: - Addresses

    public func port(_ slot: Slot) -> Int { ports[slot.rawValue] }
    public var primary: Slot { state.withLock { $0.primary } }
    public var standby: Slot? { state.withLock { $0.standby } }

    /// Both slots, `target_session_attrs=read-write`: libpq (and the worker) find the primary.
    public func url(database: String = "postgres") -> String {
        "postgresql://postgres@127.0.0.1:\(ports[0]),127.0.0.1:\(ports[1])/\(database)?target_session_attrs=read-write&sslmode=disable"
    }

    /// One slot's server, whatever its role.
    public func directURL(slot: Slot, database: String = "postgres") -> String {
        "postgresql://postgres@127.0.0.1:\(port(slot))/\(database)?sslmode=disable&connect_timeout=5"
    }

    /// `CREATE DATABASE` on the primary (it replicates to the standby).
    public func createDatabase(_ name: String) async throws {
        // An identifier cannot be a bound parameter: only plain lower-case names are accepted.
        guard !name.isEmpty, name.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "_") }) else {
            throw CommandError(description: "database name '\(name)' must be lower-case letters, digits and _")
        }
        let (primary, standby) = state.withLock { ($0.primary, $0.standby) }
        try await CommandRunner.offPool { [self] in
            try psql(primary, "CREATE DATABASE \(name)")
            // Replayed on the standby too, so a drill may read there at once (asynchronous mode included).
            if let standby {
                try waitUntil("database on the standby") { try psql(standby, "SELECT 1", database: name) == "1" }
            }
        }
    }

    // MARK: - Faults

    /// SIGSTOP the primary's postmaster and every backend: its port still completes TCP
    /// handshakes (the kernel does that) but nothing ever answers, as with a paused VM.
    public func hangPrimary() {
        let slot = primary
        let stopped = ServerProcesses.signalServer(dataDirectory: dataDirectory(slot), SIGSTOP)
        state.withLock { $0.hung = stopped }
    }

    /// SIGCONT to what `hangPrimary()` stopped (a drill that does not fail over).
    public func resumeOldPrimary() {
        let hung = state.withLock { state -> [pid_t] in
            defer { state.hung = [] }
            return state.hung
        }
        for pid in hung { kill(pid, SIGCONT) }
    }

    /// SIGKILL to every process of the primary, as a host that lost power.
    public func crashPrimary() {
        let slot = primary
        let pids = ServerProcesses.signalServer(dataDirectory: dataDirectory(slot), SIGKILL)
        ServerProcesses.killAndWait(pids)
    }

    /// Starts the primary's server again after `crashPrimary()`: crash recovery replays its WAL,
    /// and a synchronous primary waits for its standby to reconnect before commits return.
    public func startCrashedPrimary() async throws {
        let slot = primary
        try await CommandRunner.offPool { [self] in
            guard ServerProcesses.postmaster(dataDirectory: dataDirectory(slot)) == nil else {
                throw CommandError(description: "slot \(slot): the crashed primary's postmaster is still running")
            }
            // A killed postmaster leaves its lock files; one left unreaped (a zombie of a
            // container's pid 1) still answers kill(pid, 0), so the new one would refuse to start.
            let socket = "\(directory)/.s.PGSQL.\(port(slot))"
            try CommandRunner.run(["/bin/rm", "-f", socket, socket + ".lock", dataDirectory(slot) + "/postmaster.pid"])
            try startServer(slot)
        }
    }

    /// Whether the current primary waits for the standby before a commit returns. Off, a
    /// failover loses what the standby had not received yet. `rebuildStandby()` turns it back on
    /// for a synchronous set.
    public func setSynchronous(_ synchronous: Bool) async throws {
        let slot = primary
        try await CommandRunner.offPool { [self] in
            // ALTER SYSTEM cannot share a transaction with the reload: two calls.
            try psql(slot, "ALTER SYSTEM SET synchronous_standby_names = '\(synchronous ? "*" : "")'")
            try psql(slot, "SELECT pg_reload_conf()")
        }
    }

    /// `pg_ctl restart -m fast` on the primary: every client connection is cut; the standby reconnects.
    public func restartPrimary() async throws {
        let slot = primary
        let command = runAs + [binaries.pgCtl, "restart", "-w", "-t", "60", "-m", "fast", "-D", dataDirectory(slot),
                               "-l", logPath(slot), "-o", serverOptions(slot)]
        _ = try await CommandRunner.offPool { try CommandRunner.run(command) }
    }

    /// Stops forwarding on the replication connection: the standby stops receiving WAL (an
    /// asynchronous primary carries on committing; a synchronous one waits).
    public func freezeReplication() {
        state.withLock { $0.replicationProxy }?.freezeOpenConnections()
    }

    /// Cuts the frozen replication connection; the standby reconnects and catches up.
    public func thawReplication() {
        state.withLock { $0.replicationProxy }?.resetConnections()
    }

    // MARK: - Failover

    /// `pg_ctl promote -w`: returns once the standby accepts writes. The old primary's slot is
    /// left as it is (hung or dead) until `fenceOldPrimary()`.
    public func promoteStandby() async throws {
        guard let slot = standby else { throw CommandError(description: "no standby to promote") }
        let command = runAs + [binaries.pgCtl, "promote", "-w", "-t", "60", "-D", dataDirectory(slot)]
        _ = try await CommandRunner.offPool { try CommandRunner.run(command) }
        try await CommandRunner.offPool { [self] in try waitUntil("promoted standby accepts writes") {
            try psql(slot, "SELECT pg_is_in_recovery()") == "f"
        } }
        state.withLock { state in
            state.formerPrimary = state.primary
            state.primary = slot
            state.standby = nil
        }
    }

    /// Wipes the old primary's data so it can never come back as a second primary.
    ///
    /// A crashed (or still running) old primary's processes are SIGKILLed. A *hung* one's stay
    /// stopped until `rebuildStandby()` needs the slot: killed, their sockets would answer with
    /// RST and "connection refused" at once, turning a hung host into a crashed one from the
    /// clients' side; stopped, its port keeps completing TCP handshakes that nothing answers, as
    /// a fenced-off host's address does. That is the case the per-host connect deadline is for.
    public func fenceOldPrimary() async throws {
        guard let slot = state.withLock({ $0.formerPrimary }) else { return }
        let hung = state.withLock { state -> [pid_t] in
            defer {
                state.fencedHung += state.hung
                state.hung = []
            }
            return state.hung
        }
        let data = dataDirectory(slot)
        let fencedList = directory + "/fenced.pids"
        try await CommandRunner.offPool { [self] in
            if hung.isEmpty {
                ServerProcesses.killAndWait(ServerProcesses.signalServer(dataDirectory: data, SIGKILL))
            } else {
                // For the watchdog: the pids can no longer be read from the wiped postmaster.pid.
                try hung.map(String.init).joined(separator: " ").write(toFile: fencedList, atomically: true, encoding: .utf8)
            }
            try CommandRunner.run(["/bin/rm", "-rf", data])
        }
        state.withLock { $0.formerPrimary = nil }
    }

    /// A fresh standby in the fenced slot: `pg_basebackup -R` from the new primary, started,
    /// streaming; then synchronous mode on the new primary again if the set is synchronous.
    public func rebuildStandby() async throws {
        if state.withLock({ $0.formerPrimary }) != nil { try await fenceOldPrimary() }
        let (primary, target) = state.withLock { ($0.primary, $0.primary.other) }
        guard state.withLock({ $0.standby }) == nil else { return }
        let fenced = state.withLock { state -> [pid_t] in
            defer { state.fencedHung = [] }
            return state.fencedHung
        }
        try await CommandRunner.offPool { [self] in
            ServerProcesses.killAndWait(fenced)
            // A killed postmaster leaves its socket's lock file, which would keep the slot's next server from starting.
            let socket = "\(directory)/.s.PGSQL.\(port(target))"
            try CommandRunner.run(["/bin/rm", "-rf", socket, socket + ".lock", directory + "/fenced.pids"])
            try buildStandby(in: target, from: primary)
        }
    }

    /// Everything stopped and removed (hung processes included). Synchronous so it can run at exit.
    public func stop() {
        kill(watchdog, SIGTERM)
        var status: Int32 = 0
        waitpid(watchdog, &status, 0)
        let hung = state.withLock { $0.hung + $0.fencedHung }
        for slot in [Slot.a, .b] {
            ServerProcesses.killAndWait(ServerProcesses.signalServer(dataDirectory: dataDirectory(slot), SIGKILL))
        }
        ServerProcesses.killAndWait(hung)
        state.withLock { $0.replicationProxy }?.stop()
        _ = try? CommandRunner.run(["/bin/rm", "-rf", directory])
    }
}

import Foundation
import Postgres

/// The CPU the PostgreSQL server spends, read off `/proc` when it runs on this machine: its
/// postmaster, the backends and workers running now, and those that have exited (the kernel
/// adds a reaped child's time to its parent's `cutime`/`cstime`), so a phase whose sessions
/// closed before it was read is still counted.
struct DatabaseServerCPU: Sendable {
    let postmaster: pid_t

    /// The server behind `client`: the parent of one of its backends, when that parent is a
    /// local process named `postgres` (nil for a remote server or one this user cannot read).
    static func locate(_ client: PostgresClient) async -> DatabaseServerCPU? {
        guard let backend = try? await client.query("SELECT pg_backend_pid()")[0].decode(Int.self, at: 0),
              let fields = ProcessStat.fields(pid_t(backend)), fields.count > 1, let parent = pid_t(fields[1]),
              let name = try? String(contentsOfFile: "/proc/\(parent)/comm", encoding: .utf8),
              name.hasPrefix("postgres") else { return nil }
        return DatabaseServerCPU(postmaster: parent)
    }

    /// CPU seconds used so far by the whole server.
    func seconds() -> Double {
        var ticks = ProcessStat.ticks(postmaster, including: [11, 12, 13, 14]) // its own, and its reaped children's
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for entry in entries {
            guard let pid = pid_t(entry), pid != postmaster, let fields = ProcessStat.fields(pid),
                  fields.count > 1, pid_t(fields[1]) == postmaster else { continue }
            ticks += ProcessStat.ticks(fields, including: [11, 12])
        }
        return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}

/// `/proc/PID/stat`, split after the command name (which may hold spaces): field 0 is the state,
/// 1 the parent, 11 and 12 user and system time, 13 and 14 those of reaped children, in ticks.
enum ProcessStat {
    static func fields(_ pid: pid_t) -> [Substring]? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        return stat[stat.index(after: close)...].split(separator: " ")
    }

    static func ticks(_ pid: pid_t, including indices: [Int]) -> Double {
        fields(pid).map { ticks($0, including: indices) } ?? 0
    }

    /// The sum of the tick fields at `indices` of an already read line (a missing one counts 0).
    static func ticks(_ fields: [Substring], including indices: [Int]) -> Double {
        indices.reduce(0) { $0 + (fields.count > $1 ? Double(fields[$1]) ?? 0 : 0) }
    }
}

/// CPU per job of one phase of a benchmark: this process's (the worker's, or the client's of a
/// raw-SQL ceiling) and the database server's (nil when it is not on this machine). On a machine
/// whose speed drifts between minutes, these tell two phases apart better than their rates.
struct CPUPerJob: Sendable {
    let process: Double
    let database: Double?
    /// The share of the whole machine's CPU time (every core) that was busy during the phase:
    /// whether it kept the cores working or left them waiting (nil where /proc/stat is not read).
    var machineBusy: Double?

    static func measure<T>(jobs: Int, server: DatabaseServerCPU?, _ body: () async throws -> T) async throws -> (T, CPUPerJob) {
        let (process, database, machine) = (ResourceUsage.cpuSeconds(), server?.seconds(), MachineCPU.read())
        let value = try await body()
        let perJob = { (seconds: Double) in seconds * 1e6 / Double(max(1, jobs)) }
        return (value, CPUPerJob(process: perJob(ResourceUsage.cpuSeconds() - process),
                                 database: server.flatMap { server in database.map { perJob(server.seconds() - $0) } },
                                 machineBusy: MachineCPU.busy(since: machine)))
    }
}

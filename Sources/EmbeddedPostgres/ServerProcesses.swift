import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A running PostgreSQL server as processes: the postmaster (from `postmaster.pid`) and the
/// backends it forked. Signals go to all of them, because a server is only hung when every one
/// of its processes is stopped, and only gone when every one of them is dead.
enum ServerProcesses {
    /// The postmaster's pid, from the first line of `DATA/postmaster.pid` (nil when not running).
    static func postmaster(dataDirectory: String) -> pid_t? {
        guard let text = try? String(contentsOfFile: dataDirectory + "/postmaster.pid", encoding: .utf8),
              let first = text.split(separator: "\n").first, let pid = pid_t(first.trimmingCharacters(in: .whitespaces)),
              isAlive(pid) else { return nil }
        return pid
    }

    /// `root` and its direct children (a postmaster's children never fork further).
    static func tree(of root: pid_t) -> [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        let children = entries.compactMap(pid_t.init).filter { parent(of: $0) == root }
        return [root] + children
    }

    /// Alive and not a zombie (a container's pid 1 may never reap the postmaster we orphaned).
    static func isAlive(_ pid: pid_t) -> Bool {
        guard let state = stat(pid)?.first else { return false }
        return state != "Z" && state != "X"
    }

    /// Stops the postmaster first (so it forks nothing new and its children are still its
    /// children when listed), then sends `signal` to it and every child. Returns every pid signalled.
    @discardableResult
    static func signalServer(dataDirectory: String, _ signal: Int32, alsoKnown known: [pid_t] = []) -> [pid_t] {
        for pid in known where isAlive(pid) { kill(pid, signal) }
        guard let root = postmaster(dataDirectory: dataDirectory) else { return known }
        kill(root, SIGSTOP)
        let pids = tree(of: root)
        for pid in pids { kill(pid, signal) }
        return pids + known
    }

    /// SIGKILL (which ends stopped processes too), then waits until every one is gone so its
    /// port and data folder are free.
    static func killAndWait(_ pids: [pid_t], within seconds: Double = 10) {
        for pid in pids { kill(pid, SIGKILL) }
        let deadline = Date().addingTimeInterval(seconds)
        while pids.contains(where: isAlive), Date() < deadline { usleep(20_000) }
    }

    private static func parent(of pid: pid_t) -> pid_t? {
        guard let fields = stat(pid), fields.count > 1 else { return nil }
        return pid_t(fields[1])
    }

    /// The fields of `/proc/PID/stat` after "(comm)": state, ppid, ...
    private static func stat(_ pid: pid_t) -> [Substring]? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        return text[text.index(after: close)...].split(separator: " ")
    }
}

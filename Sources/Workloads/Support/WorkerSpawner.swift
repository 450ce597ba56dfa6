import Foundation
import Synchronization

/// Starts `receipt-worker` children for benchmarks and drills (posix_spawn; the caller
/// waits for them). Every child is remembered so that an interrupted run can stop them
/// all before its private database goes away (`EmbeddedDatabase`'s signal path).
public enum WorkerSpawner {
    private static let children = Mutex<Set<pid_t>>([])

    public static func spawn(_ binary: String, _ arguments: [String], environment: [String: String]) throws -> pid_t {
        var merged = ProcessInfo.processInfo.environment
        for (key, value) in environment { merged[key] = value }
        let argv = ([binary] + arguments).map { strdup($0) } + [nil]
        let envp = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, binary, nil, nil, argv, envp)
        guard result == 0 else { throw WorkloadError("cannot start \(binary): \(String(cString: strerror(result)))") }
        children.withLock { _ = $0.insert(pid) }
        return pid
    }

    /// SIGKILL to every child still registered (they are leased work: leases bring jobs back).
    public static func killAll() {
        for pid in children.withLock({ $0 }) { kill(pid, SIGKILL) }
    }
}

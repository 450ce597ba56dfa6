#if canImport(Glibc)
import Glibc
#endif

/// A worker holds a socket for each verification in flight (`WORKER_CONCURRENCY`) and keeps as many
/// alive between requests, beside its database connections; ingest holds one per client. Many
/// systems start services with a soft limit of 1,024 open files under a far higher hard limit,
/// so the process raises its soft limit to the hard one when it starts.
enum OpenFileLimit {
    /// Raises the soft limit to the hard limit (left as it is where that fails).
    static func raiseToHardLimit() {
        #if canImport(Glibc)
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(resource, &limit)
        #endif
    }

    /// The soft limit in force; nil where it cannot be read.
    static var current: Int? {
        #if canImport(Glibc)
        var limit = rlimit()
        return getrlimit(resource, &limit) == 0 ? Int(clamping: limit.rlim_cur) : nil
        #else
        return nil
        #endif
    }

    #if canImport(Glibc)
    private static let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    #endif

    /// Open files a worker needs at most: its Apple connections, its database sessions, and a
    /// margin for the metrics endpoint, the alert webhook, the log and the event loops.
    static func neededByWorker(concurrency: Int, databaseConnections: Int) -> Int {
        concurrency + databaseConnections + 64
    }
}

import Foundation
#if canImport(Glibc)
import Glibc
#endif

public struct CommandError: Error, CustomStringConvertible {
    public let description: String
}

/// Runs short-lived helper programs (initdb, pg_ctl; wrk for `bench ingest --wrk`) to completion.
///
/// Not Foundation's `Process`: on Linux it notices a child's exit through a descriptor
/// that the child's own children inherit, so `pg_ctl start` (which leaves the server
/// running) would never be seen to finish. posix_spawn + waitpid has no such tie; the
/// descriptors we open ourselves are close-on-exec.
public enum CommandRunner {
    /// Runs `arguments` (absolute executable first); returns its output, throws on failure.
    @discardableResult
    public static func run(_ arguments: [String]) throws -> String {
        let outputPath = NSTemporaryDirectory() + "receipt-worker-cmd-\(UUID().uuidString).log"
        defer { unlink(outputPath) }
        let pid = try spawn(arguments, outputPath: outputPath)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        let exited = status & 0x7f == 0
        let code = (status >> 8) & 0xff
        guard exited && code == 0 else {
            let name = URL(fileURLWithPath: arguments[0]).lastPathComponent
            let tail = output.split(separator: "\n").suffix(3).joined(separator: " | ")
            throw CommandError(description: "\(name) failed (status \(status)): \(tail)")
        }
        return output
    }

    /// Starts `arguments` with stdin from /dev/null and output to `outputPath`; returns its pid.
    /// `ownProcessGroup` keeps it alive when our process group is signalled (a watchdog must outlive us).
    static func spawn(_ arguments: [String], outputPath: String = "/dev/null", ownProcessGroup: Bool = false) throws -> pid_t {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // The child starts with no signal blocked and default dispositions: our process blocks
        // SIGTERM/SIGINT for its own signal watcher, and a daemon that inherits that mask (and
        // does not reset it, as PgBouncer does not) could never be stopped by a signal.
        var flags = Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var defaults = sigset_t()
        sigfillset(&defaults)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        if ownProcessGroup {
            flags |= Int16(POSIX_SPAWN_SETPGROUP)
            posix_spawnattr_setpgroup(&attributes, 0)
        }
        posix_spawnattr_setflags(&attributes, flags)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let cArguments = arguments.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, arguments[0], &actions, &attributes, cArguments, environ)
        guard spawned == 0 else {
            let name = URL(fileURLWithPath: arguments[0]).lastPathComponent
            throw CommandError(description: "cannot start \(name): \(String(cString: strerror(spawned)))")
        }
        return pid
    }

    /// Runs blocking work on its own thread so async callers never block the cooperative pool.
    public static func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try work() }) }.start()
        }
    }
}

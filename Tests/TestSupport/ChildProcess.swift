import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A real `receipt-worker` (or other) process for end-to-end tests: started with
/// posix_spawn, output captured, killable with any signal.
public final class ChildProcess: Sendable {
    public let pid: pid_t
    private let output: Mutex<(stdout: [UInt8], stderr: [UInt8])> = Mutex(([], []))
    private let exitStatus = Mutex<Int32?>(nil)

    /// The freshly built binary next to the test bundle.
    public static var receiptWorkerPath: String {
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return executable.deletingLastPathComponent().appendingPathComponent("receipt-worker").path
    }

    /// Starts `receipt-worker` with `arguments`, the current environment plus `environment`.
    public static func receiptWorker(_ arguments: [String], environment: [String: String] = [:]) throws -> ChildProcess {
        try ChildProcess([receiptWorkerPath] + arguments, environment: environment)
    }

    public init(_ arguments: [String], environment extra: [String: String] = [:], removing: [String] = []) throws {
        var environment = ProcessInfo.processInfo.environment
        for name in removing { environment.removeValue(forKey: name) }
        for (key, value) in extra { environment[key] = value }
        var stdoutPipe: [Int32] = [0, 0], stderrPipe: [Int32] = [0, 0]
        guard pipe(&stdoutPipe) == 0, pipe(&stderrPipe) == 0 else { throw POSIXError(.EMFILE) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, stdoutPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, stderrPipe[1], 2)
        for fd in stdoutPipe + stderrPipe { posix_spawn_file_actions_addclose(&actions, fd) }
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, arguments[0], &actions, nil, argv, envp)
        close(stdoutPipe[1])
        close(stderrPipe[1])
        guard result == 0 else {
            close(stdoutPipe[0]); close(stderrPipe[0])
            throw POSIXError(POSIXErrorCode(rawValue: result) ?? .ENOENT)
        }
        self.pid = pid
        let drains = [(stdoutPipe[0], true), (stderrPipe[0], false)].map { fd, isStdout in
            Thread { [self] in
                var buffer = [UInt8](repeating: 0, count: 65_536)
                while true {
                    let count = read(fd, &buffer, buffer.count)
                    if count <= 0 { break }
                    output.withLock {
                        if isStdout { $0.stdout += buffer[0..<count] } else { $0.stderr += buffer[0..<count] }
                    }
                }
                close(fd)
            }
        }
        drains.forEach { $0.start() }
        let child = pid
        Thread { [self] in
            var status: Int32 = 0
            while waitpid(child, &status, 0) == -1 && errno == EINTR {}
            exitStatus.withLock { $0 = status }
        }.start()
    }

    public var stdout: String { String(decoding: output.withLock { $0.stdout }, as: UTF8.self) }
    public var stderr: String { String(decoding: output.withLock { $0.stderr }, as: UTF8.self) }
    public var isRunning: Bool { exitStatus.withLock { $0 == nil } }

    public func signal(_ number: Int32) { kill(pid, number) }

    /// Waits for exit (up to `timeout`); returns the exit code, or 128+signal.
    @discardableResult
    public func wait(timeout: Double = 120) async throws -> Int32 {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let status = exitStatus.withLock({ $0 }) {
                try await Task.sleep(for: .milliseconds(20)) // let the readers drain the pipes
                return status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        signal(SIGKILL)
        throw ChildProcessTimeout(arguments: "pid \(pid)")
    }

    /// Runs to completion: (exit code, stdout, stderr).
    public static func run(_ arguments: [String], environment: [String: String] = [:], removing: [String] = [],
                           timeout: Double = 120) async throws -> (code: Int32, stdout: String, stderr: String) {
        let process = try ChildProcess(arguments, environment: environment, removing: removing)
        let code = try await process.wait(timeout: timeout)
        return (code, process.stdout, process.stderr)
    }
}

public struct ChildProcessTimeout: Error { public let arguments: String }

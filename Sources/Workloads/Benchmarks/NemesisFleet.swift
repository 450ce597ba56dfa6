import Foundation
import Synchronization

/// The nemesis's worker processes: `receipt-worker work`, each logging to its own file (kept
/// across restarts, so every line any incarnation wrote can be counted at the end).
final class NemesisFleet: Sendable {
    let logDirectory: String
    private let binary: String
    private let environment: [String: String]
    private let pids: Mutex<[pid_t?]>
    private let counters = Mutex((restarts: 0, unexpectedExits: 0))

    init(binary: String, count: Int, environment: [String: String]) throws {
        var template = Array("/tmp/receipt-worker-nemesis.XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw WorkloadError("cannot create a temp folder in /tmp") }
        logDirectory = String(cString: made)
        self.binary = binary
        self.environment = environment
        pids = Mutex(Array(repeating: nil, count: count))
    }

    var count: Int { pids.withLock { $0.count } }
    var restarts: Int { counters.withLock { $0.restarts } }
    var unexpectedExits: Int { counters.withLock { $0.unexpectedExits } }

    func startAll() throws {
        for index in 0..<count { try start(index) }
    }

    /// `/bin/sh` only redirects, then `exec`s: the pid is the worker's own.
    private func start(_ index: Int) throws {
        let pid = try WorkerSpawner.spawn("/bin/sh", ["-c", #"exec "$@" >>"$0" 2>&1"#, "\(logDirectory)/work-\(index).log", binary, "work"],
                                          environment: environment)
        pids.withLock { $0[index] = pid }
    }

    /// SIGKILL, as the OOM killer would; the worker stays down until `restart`. False when it
    /// was not running.
    @discardableResult
    func kill(_ index: Int) -> Bool {
        guard let pid = pids.withLock({ state -> pid_t? in
            defer { state[index] = nil }
            return state[index]
        }) else { return false }
        Glibc.kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        return true
    }

    func restart(_ index: Int) throws {
        guard pids.withLock({ $0[index] }) == nil else { return }
        try start(index)
        counters.withLock { $0.restarts += 1 }
    }

    /// False when the worker was not running.
    @discardableResult
    func signal(_ index: Int, _ number: Int32) -> Bool {
        guard let pid = pids.withLock({ $0[index] }) else { return false }
        return Glibc.kill(pid, number) == 0
    }

    /// Workers that exited without being killed are counted and started again.
    func restartExited() throws {
        for index in 0..<count {
            guard let pid = pids.withLock({ $0[index] }) else { continue }
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                pids.withLock { $0[index] = nil }
                counters.withLock { $0.unexpectedExits += 1 }
                try restart(index)
            }
        }
    }

    /// SIGTERM (SIGCONT first, in case one is paused), up to 20 s each, then SIGKILL.
    /// Returns how many exited 0.
    func stopAll() async -> (clean: Int, total: Int) {
        let running = pids.withLock { state -> [pid_t] in
            defer { state = state.map { _ in nil } }
            return state.compactMap { $0 }
        }
        for pid in running {
            Glibc.kill(pid, SIGCONT)
            Glibc.kill(pid, SIGTERM)
        }
        var clean = 0
        for pid in running {
            let deadline = ContinuousClock.now + .seconds(20)
            var status: Int32 = 0
            var exited = false
            while ContinuousClock.now < deadline {
                if waitpid(pid, &status, WNOHANG) == pid { exited = true; break }
                try? await Task.sleep(for: .milliseconds(50))
            }
            if !exited {
                Glibc.kill(pid, SIGKILL)
                waitpid(pid, &status, 0)
            } else if status & 0x7f == 0, (status >> 8) & 0xff == 0 {
                clean += 1
            }
        }
        return (clean, running.count)
    }

    /// Every announcing line any incarnation of any worker wrote.
    func loggedAnnouncements() -> [NemesisAnnouncement] {
        NemesisLogReader.announcements(inDirectory: logDirectory)
    }

    /// The running worker's pid in `index` (nil while it is down).
    func pid(_ index: Int) -> pid_t? { pids.withLock { $0[index] } }

    func removeLogs() { try? FileManager.default.removeItem(atPath: logDirectory) }
}

#if canImport(Glibc)
import Glibc
import Foundation

/// One epoll thread multiplexing many non-blocking sockets, so thousands of slow connections cost
/// file descriptors and a little memory rather than threads.
///
/// Everything except `execute`, `stop` and `waitUntilExited` must be called on the loop thread
/// (from an fd handler, a sweep, or a job passed to `execute`).
final class EventLoop: @unchecked Sendable {
    typealias FDHandler = (_ events: UInt32) -> Void

    static let readable = Epoll.inEvent
    static let writable = Epoll.outEvent
    static let hangup = Epoll.hupEvent | Epoll.errEvent

    private let epfd: Int32
    private let wakeFD: Int32
    private let name: String

    /// Jobs from other threads; `closed` once the loop is exiting and refuses new ones.
    private let inbox = Locked<(jobs: [@Sendable () -> Void], closed: Bool)>(([], false))
    private let exitWaiters = Locked<(exited: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    // Loop-thread state.
    private var handlers: [UInt64: FDHandler] = [:]
    /// The jobs of the current turn (see `runJobs`).
    private var turnJobs: [@Sendable () -> Void] = []
    private var nextToken: UInt64 = 1
    private var running = true
    private var sweep: (() -> UInt64?)?
    private var sweepGranularity: UInt64 = 10_000_000
    private var nextSweepAt: UInt64?
    private var lastSweepAt: UInt64 = 0
    /// Runs once on the loop thread as it exits (e.g. to fail requests still waiting).
    var onExit: (() -> Void)?

    init(name: String) throws {
        epfd = Epoll.create()
        guard epfd >= 0 else { throw HTTPServerError.systemCallFailed("epoll_create1: \(errnoDescription())") }
        wakeFD = Epoll.eventFD()
        guard wakeFD >= 0 else {
            close(epfd)
            throw HTTPServerError.systemCallFailed("eventfd: \(errnoDescription())")
        }
        self.name = name
        _ = Epoll.control(epfd, Epoll.ctlAdd, wakeFD, events: Self.readable, token: 0)
    }

    func start() {
        let thread = Thread { [self] in self.runLoop() }
        thread.name = name
        thread.start()
    }

    /// Runs `job` on the loop thread. Returns false when the loop has already exited (job dropped).
    @discardableResult
    func execute(_ job: @escaping @Sendable () -> Void) -> Bool {
        inbox.withLock { inbox in
            guard !inbox.closed else { return false }
            inbox.jobs.append(job)
            if inbox.jobs.count == 1 {  // otherwise a wake-up is already pending
                var one: UInt64 = 1
                _ = write(wakeFD, &one, 8)
            }
            return true
        }
    }

    /// Asks the loop to exit after the jobs already posted; fds stay the owners' to close.
    func stop() {
        execute { [self] in self.running = false }
    }

    func waitUntilExited() async {
        await withCheckedContinuation { (cont: CheckedContinuation<Void, Never>) in
            let resumeNow = exitWaiters.withLock { state -> Bool in
                if state.exited { return true }
                state.waiters.append(cont)
                return false
            }
            if resumeNow { cont.resume() }
        }
    }

    // MARK: loop-thread API

    func register(fd: Int32, events: UInt32, handler: @escaping FDHandler) -> UInt64 {
        let token = nextToken
        nextToken += 1
        handlers[token] = handler
        _ = Epoll.control(epfd, Epoll.ctlAdd, fd, events: events, token: token)
        return token
    }

    func modify(fd: Int32, token: UInt64, events: UInt32) {
        _ = Epoll.control(epfd, Epoll.ctlMod, fd, events: events, token: token)
    }

    /// Removes the fd from epoll (the caller closes it). Events already fetched for it are skipped.
    func deregister(fd: Int32, token: UInt64) {
        handlers[token] = nil
        _ = Epoll.control(epfd, Epoll.ctlDel, fd, events: 0, token: 0)
    }

    /// Installs the single deadline sweep. It returns the earliest remaining deadline (or nil).
    /// Sweeps run at most once per `granularity`, so a scan over all connections stays cheap.
    func setSweep(granularity: UInt64, _ body: @escaping () -> UInt64?) {
        sweep = body
        sweepGranularity = max(1_000_000, granularity)
    }

    /// Tells the loop a deadline exists at `at` (monotonic ns); cheap, call on every deadline change.
    func noteDeadline(_ at: UInt64) {
        let at = max(at, lastSweepAt &+ sweepGranularity)
        if let next = nextSweepAt, next <= at { return }
        nextSweepAt = at
    }

    // MARK: the loop

    private func runLoop() {
        let events = Epoll.Events(capacity: 512)
        defer { events.deallocate() }
        while running {
            var timeout: Int32 = -1
            if let next = nextSweepAt {
                let now = monotonicNanos()
                timeout = next <= now ? 0 : Int32(min((next - now + 999_999) / 1_000_000, 60_000))
            }
            let n = events.wait(epfd, timeoutMs: timeout)
            for i in 0..<max(0, Int(n)) {
                let (mask, token) = events.event(i)
                if token == 0 {
                    var value: UInt64 = 0
                    _ = read(wakeFD, &value, 8)
                } else {
                    handlers[token]?(mask)
                }
            }
            runJobs()
            if let next = nextSweepAt, monotonicNanos() >= next, let sweep {
                lastSweepAt = monotonicNanos()
                nextSweepAt = nil
                if let nextDeadline = sweep() { noteDeadline(nextDeadline) }
            }
        }
        // Refuse further jobs, but run the ones already posted (they may carry continuations),
        // then let the owner fail or close whatever is left.
        let leftovers = inbox.withLock { inbox -> [@Sendable () -> Void] in
            inbox.closed = true
            defer { inbox.jobs.removeAll() }
            return inbox.jobs
        }
        leftovers.forEach { $0() }
        onExit?()
        onExit = nil
        handlers.removeAll()
        sweep = nil
        close(wakeFD)  // safe: a closed inbox never writes to it again
        close(epfd)
        let waiters = exitWaiters.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.exited = true
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        waiters.forEach { $0.resume() }
    }

    /// The inbox and `turnJobs` trade buffers, so neither is reallocated per turn (a copy out and
    /// `removeAll(keepingCapacity:)` would allocate a buffer of thousands of jobs every turn).
    private func runJobs() {
        inbox.withLock { inbox in swap(&inbox.jobs, &turnJobs) }
        for job in turnJobs { job() }
        turnJobs.removeAll(keepingCapacity: true)
    }
}
#endif

import Synchronization

/// The lease ended while a duty ran: the duty stops where it stands (the next leader resumes).
public struct LeaseEnded: Error, CustomStringConvertible {
    public let task: String?
    public init(task: String? = nil) { self.task = task }
    public var description: String { "the maintenance lease ended" + (task.map { " during \($0)" } ?? "") }
}

/// This process's own view of the lease, by its monotonic clock: until when it may act
/// as leader, and which term that is. A term is one unbroken run of leadership: renewals extend
/// it; once it has lapsed, a lease won again is a new term, so a duty started under the old one
/// never goes on under the new one (another process may have led in between).
final class LeaseClock: Sendable {
    private struct State {
        var until: ContinuousClock.Instant?
        var term: UInt64 = 0
    }

    private let state = Mutex(State())

    /// The lease was granted by a renewal sent at `sentAt`; it is trusted for `length` from then.
    /// A grant that arrives after the lease lapsed (even a renewal sent in time) starts a new term.
    func granted(sentAt: ContinuousClock.Instant, length: Duration) {
        state.withLock { state in
            if state.until.map({ ContinuousClock.now >= $0 }) ?? true { state.term += 1 }
            state.until = sentAt + length
        }
    }

    /// Someone else holds the lease, or this process resigned.
    func revoke() { state.withLock { $0.until = nil } }

    /// The lease's end if `term` (any term when nil) holds now.
    func end(of term: UInt64?, now: ContinuousClock.Instant = .now) -> ContinuousClock.Instant? {
        state.withLock { state in
            guard let until = state.until, now < until, term.map({ $0 == state.term }) ?? true else { return nil }
            return until
        }
    }

    /// The term held now, if any.
    func current() -> LeaderTerm? {
        state.withLock { state in
            guard let until = state.until, ContinuousClock.now < until else { return nil }
            return LeaderTerm(clock: self, number: state.term)
        }
    }
}

/// The lease a duty runs under. Long duties call `check()` between steps (pages, batches) and
/// stop when it throws; the leader also cancels a duty's task when its term ends.
public struct LeaderTerm: Sendable {
    let clock: LeaseClock
    public let number: UInt64

    /// This term still holds by this process's clock (renewals extend it).
    public var isHeld: Bool { clock.end(of: number) != nil }

    /// When the lease ends as known now (a renewal moves it on); nil once it has ended.
    public var expires: ContinuousClock.Instant? { clock.end(of: number) }

    /// Throws `LeaseEnded` once the term is over: nothing more may be done under it.
    public func check() throws {
        guard isHeld else { throw LeaseEnded() }
    }

    /// Returns when the term ends (polled briefly: a renewal that finds another holder ends it at once).
    func ended() async {
        while let end = expires {
            let wait = min(end - .now, .milliseconds(200))
            guard (try? await Task.sleep(for: max(wait, .milliseconds(1)))) != nil else { return }
        }
    }

    /// A term for tests and one-off runs that holds until `until`.
    public static func held(until: ContinuousClock.Instant) -> LeaderTerm {
        let clock = LeaseClock()
        clock.granted(sentAt: .now, length: until - .now)
        return LeaderTerm(clock: clock, number: 1)
    }
}

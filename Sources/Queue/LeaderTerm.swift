import Postgres
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
        var fence: LeaderFence?
    }

    private let state = Mutex(State())

    /// The lease was granted by a renewal sent at `sentAt`; it is trusted for `length` from then.
    /// A grant that arrives after the lease lapsed (even a renewal sent in time) starts a new term.
    func granted(sentAt: ContinuousClock.Instant, length: Duration, fence: LeaderFence? = nil) {
        state.withLock { state in
            if state.until.map({ ContinuousClock.now >= $0 }) ?? true { state.term += 1 }
            state.until = sentAt + length
            state.fence = fence
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
            return LeaderTerm(clock: self, number: state.term, fence: state.fence)
        }
    }
}

/// The term as the database knows it: the lease's holder and when it was elected. A duty's
/// statement runs behind a check of it (`iap.leader_term_holds`, migration 0033).
public struct LeaderFence: Sendable, Equatable {
    public let name: String
    public let leaderID: String
    /// `iap.leader.elected_at` as the server printed it (it reads back exactly).
    public let electedAt: String

    static let checkSQL = "SELECT iap.leader_term_holds($1, $2, $3::timestamptz)"
    /// What the check raises once the term has ended.
    static let endedState = "RWL01"

    var statement: PostgresStatement { PostgresStatement(Self.checkSQL, [name, leaderID, electedAt]) }
}

/// The lease a duty runs under. Long duties call `check()` between steps (pages, batches) and
/// stop when it throws; the leader also cancels a duty's task when its term ends.
public struct LeaderTerm: Sendable {
    let clock: LeaseClock
    public let number: UInt64
    /// Nil for a term held outside `iap.leader` (tests, one-off runs): nothing to check in the database.
    let fence: LeaderFence?

    init(clock: LeaseClock, number: UInt64, fence: LeaderFence? = nil) {
        self.clock = clock
        self.number = number
        self.fence = fence
    }

    /// This term still holds by this process's clock (renewals extend it).
    public var isHeld: Bool { clock.end(of: number) != nil }

    /// When the lease ends as known now (a renewal moves it on); nil once it has ended.
    public var expires: ContinuousClock.Instant? { clock.end(of: number) }

    /// Throws `LeaseEnded` once the term is over: nothing more may be done under it.
    public func check() throws {
        guard isHeld else { throw LeaseEnded() }
    }

    /// Runs one statement that changes nothing unless the term still holds in the database when
    /// it runs: the check and the statement go in one round trip, as one implicit transaction.
    public func query(_ client: PostgresClient, _ sql: String, _ binds: [any PostgresEncodable] = []) async throws -> PostgresRows {
        try check()
        guard let fence else { return try await client.query(sql, binds) }
        do {
            return try await client.withConnection { try await $0.pipeline([fence.statement, PostgresStatement(sql, binds)]) }[1]
        } catch let error as PostgresError where error.sqlState == LeaderFence.endedState {
            throw LeaseEnded()
        }
    }

    /// Inside a duty's transaction, before its writes: the transaction fails unless the term still
    /// holds in the database (and a statement that raises aborts the whole transaction).
    public func check(on connection: PostgresConnection) async throws {
        try check()
        guard let fence else { return }
        do {
            _ = try await connection.query(LeaderFence.checkSQL, [fence.name, fence.leaderID, fence.electedAt])
        } catch let error as PostgresError where error.sqlState == LeaderFence.endedState {
            throw LeaseEnded()
        }
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

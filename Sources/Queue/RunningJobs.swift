/// The verifications in flight, by claim. A claim's jobs share one deadline and are run by
/// *takers*: tasks that take the claim's next job, verify it, and take another until none is
/// left. The claiming task starts a taker, and another each time the last one suspends (a
/// request to Apple), so every job that waits has a task of its own, while jobs answered
/// without waiting share one: a task per job would cost a task's creation even where no job waits.
///
/// A job reaches its entry through its `Slot` (its claim and its place in it), so starting and
/// finishing a job hashes no job id.
struct RunningJobs {
    /// One claim's verifications. Changed only under the lock that guards the `RunningJobs` it
    /// came from (the worker's), which is what makes handing it to the takers' tasks safe.
    final class Claim: @unchecked Sendable {
        fileprivate let number: Int
        fileprivate let ids: [Int]
        fileprivate let deadline: ContinuousClock.Instant
        /// The next job no taker has taken yet.
        fileprivate var next = 0
        /// Which taker took each job (-1: not taken yet).
        fileprivate var takenBy: [Int]
        /// Each taker's task, known once its start has returned (it runs at once until it suspends).
        fileprivate var takers: [Task<Void, Never>?] = []
        fileprivate var finished: [Bool]
        fileprivate var left: Int

        fileprivate init(number: Int, ids: [Int], deadline: ContinuousClock.Instant) {
            self.number = number
            self.ids = ids
            self.deadline = deadline
            takenBy = Array(repeating: -1, count: ids.count)
            finished = Array(repeating: false, count: ids.count)
            left = ids.count
        }

        /// The claim's jobs still running after this one, or nil when it had finished already.
        fileprivate func finish(at index: Int) -> Int? {
            guard !finished[index] else { return nil }
            finished[index] = true
            left -= 1
            return left
        }

        /// The jobs still running whose taker's task is known.
        fileprivate var unfinished: [(id: Int, task: Task<Void, Never>)] {
            ids.indices.compactMap { index in
                guard !finished[index], takenBy[index] >= 0, let task = takers[takenBy[index]] else { return nil }
                return (ids[index], task)
            }
        }
    }

    /// Where one job's entry is.
    struct Slot: Sendable {
        let claim: Claim
        let index: Int
    }

    /// By number, for the watchdog and the shutdown: looked up once per claim, never per job.
    private var claims: [Int: Claim] = [:]
    private var lastClaim = 0
    /// Jobs started and not finished.
    private(set) var count = 0

    /// Registers a claim's jobs before any is taken.
    mutating func begin(_ ids: [Int], deadline: ContinuousClock.Instant) -> Claim {
        lastClaim += 1
        let claim = Claim(number: lastClaim, ids: ids, deadline: deadline)
        claims[lastClaim] = claim
        count += ids.count
        return claim
    }

    /// A number for one more taker of `claim`, or nil when every job of it has been taken.
    mutating func newTaker(for claim: Claim) -> Int? {
        guard claim.next < claim.ids.count else { return nil }
        claim.takers.append(nil)
        return claim.takers.count - 1
    }

    /// The place of the next job `taker` verifies, or nil when none is left.
    mutating func take(from claim: Claim, by taker: Int) -> Slot? {
        guard claim.next < claim.ids.count else { return nil }
        let index = claim.next
        claim.next += 1
        claim.takenBy[index] = taker
        return Slot(claim: claim, index: index)
    }

    /// A taker's task, once its start returned (nothing to keep once every job has finished).
    mutating func attach(_ task: Task<Void, Never>, taker: Int, to claim: Claim) {
        guard claim.left > 0 else { return }
        claim.takers[taker] = task
    }

    /// Returns the takers of a claim whose last job this was, to be let go of outside the lock.
    @discardableResult
    mutating func finish(_ slot: Slot) -> [Task<Void, Never>?] {
        guard let left = slot.claim.finish(at: slot.index) else { return [] }
        count -= 1
        guard left == 0 else { return [] }
        claims[slot.claim.number] = nil
        defer { slot.claim.takers = [] } // each taker holds its claim: no cycle is left behind
        return slot.claim.takers
    }

    /// The tasks running unfinished jobs, each once.
    var tasks: [Task<Void, Never>] {
        var seen = Set<Task<Void, Never>>()
        return claims.values.flatMap(\.unfinished).map(\.task).filter { seen.insert($0).inserted }
    }

    /// Unfinished jobs past their claim's deadline, with the task running each.
    func overdue(at now: ContinuousClock.Instant) -> [(id: Int, task: Task<Void, Never>)] {
        claims.values.filter { $0.deadline <= now }.flatMap(\.unfinished)
    }
}

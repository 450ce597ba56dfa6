/// The verifications in flight, by claim: a claim's jobs share one deadline, and a job reaches
/// its entry through its `Slot` (its claim and its place in it). Starting and finishing a job
/// hashes no job id: a dictionary by job id (an insert and a removal per job) was a tenth of
/// the worker's CPU in `bench queue`, and a dictionary by claim number still cost every job a
/// lookup (3% of the worker's CPU).
struct RunningJobs {
    /// One claim's verifications. Changed only under the lock that guards the `RunningJobs` it
    /// came from (the worker's), which is what makes handing it to the jobs' tasks safe.
    final class Claim: @unchecked Sendable {
        fileprivate let number: Int
        fileprivate let ids: [Int]
        fileprivate let deadline: ContinuousClock.Instant
        fileprivate var tasks: [Task<Void, Never>] = []
        fileprivate var finished: [Bool]
        fileprivate var left: Int

        fileprivate init(number: Int, ids: [Int], deadline: ContinuousClock.Instant) {
            self.number = number
            self.ids = ids
            self.deadline = deadline
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

        /// The jobs still running whose tasks are known.
        fileprivate var unfinished: some Sequence<(id: Int, task: Task<Void, Never>)> {
            zip(ids.indices, tasks).lazy.filter { !self.finished[$0.0] }.map { (self.ids[$0.0], $0.1) }
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

    /// Registers a claim's jobs before their tasks start (a task may finish at once); the claim
    /// returned is the first part of each job's `Slot`.
    mutating func begin(_ ids: [Int], deadline: ContinuousClock.Instant) -> Claim {
        lastClaim += 1
        let claim = Claim(number: lastClaim, ids: ids, deadline: deadline)
        claims[lastClaim] = claim
        count += ids.count
        return claim
    }

    /// The claim's tasks, in the order of its ids (nothing to keep once every job has finished).
    mutating func attach(_ tasks: [Task<Void, Never>], toClaim claim: Claim) {
        guard claim.left > 0 else { return }
        claim.tasks = tasks
    }

    /// Returns the tasks of a claim whose last job this was, to be let go of outside the lock.
    @discardableResult
    mutating func finish(_ slot: Slot) -> [Task<Void, Never>] {
        guard let left = slot.claim.finish(at: slot.index) else { return [] }
        count -= 1
        guard left == 0 else { return [] }
        claims[slot.claim.number] = nil
        defer { slot.claim.tasks = [] } // each task's slot holds its claim: no cycle is left behind
        return slot.claim.tasks
    }

    var tasks: [Task<Void, Never>] { claims.values.flatMap { $0.unfinished.map(\.task) } }

    func overdue(at now: ContinuousClock.Instant) -> [(id: Int, task: Task<Void, Never>)] {
        claims.values.filter { $0.deadline <= now }.flatMap { Array($0.unfinished) }
    }
}

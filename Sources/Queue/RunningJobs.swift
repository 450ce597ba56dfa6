/// The verifications in flight, by claim: a claim's jobs share one deadline, and a job finds
/// its entry by its claim's number and its place in the claim. Starting and finishing a job
/// hashes no job id: a dictionary by job id (an insert and a removal per job) was a tenth of
/// the worker's CPU in `bench queue`.
struct RunningJobs {
    /// Where one job's entry is.
    struct Slot: Sendable {
        let claim: Int
        let index: Int
    }

    private struct Claim {
        let ids: [Int]
        let deadline: ContinuousClock.Instant
        var tasks: [Task<Void, Never>] = []
        var finished: [Bool]
        var left: Int

        /// The claim's jobs still running after this one, or nil when it had finished already.
        mutating func finish(at index: Int) -> Int? {
            guard !finished[index] else { return nil }
            finished[index] = true
            left -= 1
            return left
        }

        /// The jobs still running whose tasks are known.
        var unfinished: some Sequence<(id: Int, task: Task<Void, Never>)> {
            zip(ids.indices, tasks).lazy.filter { !finished[$0.0] }.map { (ids[$0.0], $0.1) }
        }
    }

    private var claims: [Int: Claim] = [:]
    private var lastClaim = 0
    /// Jobs started and not finished.
    private(set) var count = 0

    /// Registers a claim's jobs before their tasks start (a task may finish at once); the
    /// number returned is the claim's part of each job's `Slot`.
    mutating func begin(_ ids: [Int], deadline: ContinuousClock.Instant) -> Int {
        lastClaim += 1
        claims[lastClaim] = Claim(ids: ids, deadline: deadline, finished: Array(repeating: false, count: ids.count), left: ids.count)
        count += ids.count
        return lastClaim
    }

    /// The claim's tasks, in the order of its ids (nothing to keep once every job has finished).
    mutating func attach(_ tasks: [Task<Void, Never>], toClaim claim: Int) {
        claims[claim]?.tasks = tasks
    }

    mutating func finish(_ slot: Slot) {
        guard let left = claims[slot.claim]?.finish(at: slot.index) else { return }
        count -= 1
        if left == 0 { claims[slot.claim] = nil }
    }

    var tasks: [Task<Void, Never>] { claims.values.flatMap { $0.unfinished.map(\.task) } }

    func overdue(at now: ContinuousClock.Instant) -> [(id: Int, task: Task<Void, Never>)] {
        claims.values.filter { $0.deadline <= now }.flatMap { Array($0.unfinished) }
    }
}

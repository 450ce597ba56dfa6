import Synchronization

/// The jobs this process holds a lease on and still means to finish: claimed, verifying, or
/// waiting for their completion to be written. Any other job leased to this worker id was
/// orphaned (a claim whose reply was lost) and is handed back (`QueueStore.claim(handingBackAllBut:)`).
///
/// It also knows each job's claim (its row in iap.job_leases, migration 0029): once every job of
/// a claim is let go, the row is due to be deleted (`takeDroppableLeases`), so the lease rows
/// the rescuer, the hand-back and the statistics read stay as few as the claims in flight.
/// Each claim remembers how many sessions the pool had opened when it was taken: a row whose
/// jobs were all written on sessions that existed then is deleted as it is; one that saw a new
/// session (a reconnect, maybe to a promoted standby that lost a commit) is deleted only if none
/// of its jobs still runs on it.
final class HeldJobs: Sendable {
    /// One claim's jobs (its lease row), in id order as claimed: a job let go of is found by
    /// binary search in its own claim, so holding and letting go hash no job id (a dictionary
    /// by job id would cost a hashed insert and removal per job on the hot path).
    private struct Lease {
        var ids: [Int]
        var held: [Bool]
        /// Each job's attempt as claimed: a job taken again at the same attempt was claimed by a
        /// claim that was undone; at a later one, by a claim after its result was written.
        var attempts: [Int]
        var outstanding: Int
        let sessionsOpened: Int

        /// Whether `id` was held here (and is no longer).
        mutating func letGo(_ id: Int) -> Bool {
            guard let position = heldPosition(of: id) else { return false }
            held[position] = false
            outstanding -= 1
            return true
        }

        /// Where `id` is, if it is held here.
        func heldPosition(of id: Int) -> Int? {
            var (low, high) = (0, ids.count)
            while low < high {
                let middle = (low + high) / 2
                if ids[middle] < id { low = middle + 1 } else { high = middle }
            }
            return low < ids.count && ids[low] == id && held[low] ? low : nil
        }
    }
    private struct State {
        var leases: [Int: Lease] = [:]
        /// Jobs claimed without a lease row, with their attempts.
        var unleased: [Int: Int] = [:]
        var count = 0
        var droppable: [(id: Int, sessionsOpened: Int)] = []
        /// Jobs a later claim took again while they ran here (`hold`), by that claim's lease:
        /// let go of there too, without being counted twice.
        var alsoUnder: [Int: Int] = [:]
        /// Runs held here whose job a later claim took at another attempt: their lease ran out and
        /// the job was rescued, so their results are not to be written (`superseded(among:)`).
        var superseded: Set<JobRun> = []

        /// Of `claimed`, the jobs held here already: at the same attempt (`again`, each with the
        /// lease it is held under, -1: none, `unleased`), or at another one (`superseded`, the
        /// earlier runs). Only leases whose ids overlap the claim's are searched: claims of a
        /// backlog do not overlap, so the usual claim costs a comparison per lease in flight.
        func heldBefore(_ claimed: [ClaimedJob]) -> (again: [Int: Int], superseded: [JobRun]) {
            guard let low = claimed.lazy.map(\.id).min(), let high = claimed.lazy.map(\.id).max() else { return ([:], []) }
            var again: [Int: Int] = [:]
            var superseded: [JobRun] = []
            for (id, lease) in leases {
                guard let first = lease.ids.first, let last = lease.ids.last, first <= high, last >= low else { continue }
                for job in claimed {
                    guard let position = lease.heldPosition(of: job.id) else { continue }
                    let attempt = lease.attempts[position]
                    if attempt == job.attempts {
                        again[job.id] = id
                    } else {
                        superseded.append(JobRun(jobID: job.id, leaseID: id, attempt: attempt))
                    }
                }
            }
            if !unleased.isEmpty {
                for job in claimed {
                    guard let attempt = unleased[job.id] else { continue }
                    if attempt == job.attempts {
                        again[job.id] = -1
                    } else {
                        superseded.append(JobRun(jobID: job.id, leaseID: nil, attempt: attempt))
                    }
                }
            }
            return (again, superseded)
        }

        /// A lease none of whose jobs is held any more is due to be dropped.
        mutating func put(_ lease: Lease, as id: Int) {
            if lease.outstanding > 0 {
                leases[id] = lease
            } else {
                droppable.append((id, lease.sessionsOpened))
            }
        }
    }
    private let state = Mutex(State())

    /// Holds one claim's jobs and returns those to start: all of them but any this process
    /// holds already at the same attempt. A job held here comes back in a claim at the same
    /// attempt only when the claim that gave it was undone (a crash or a failover lost its
    /// commit, which does not wait for the flush): its run goes on and is not started twice,
    /// since the lease check names the worker, not the run. It is held under the new claim's
    /// lease row too, so that row, the rescuer's way to the job now, stays while the job runs.
    ///
    /// At another attempt (a later one, or a fresh round after a sweep), the job's lease here ran
    /// out and the rescuer gave it back: the new run starts, and the earlier run is superseded
    /// (`superseded(among:)`) until it is let go.
    ///
    /// The claim's session count is its jobs' (`ClaimedJob.sessionEpoch`, read before the claim
    /// was sent), not the pool's now: a session opened while the claim was in flight makes its
    /// lease row unsure.
    @discardableResult
    func hold(_ claimed: [ClaimedJob]) -> [ClaimedJob] {
        guard let first = claimed.first else { return [] }
        return state.withLock { state in
            let (again, superseded) = state.heldBefore(claimed)
            state.superseded.formUnion(superseded)
            let starting = again.isEmpty ? claimed : claimed.filter { again[$0.id] == nil }
            state.count += starting.count
            // One claim, one lease row.
            guard let lease = first.leaseID else {
                for job in starting { state.unleased[job.id] = job.attempts }
                return starting
            }
            let adding = again.isEmpty ? claimed : claimed.filter { again[$0.id] != lease }
            for (job, earlier) in again where earlier != lease { state.alsoUnder[job] = lease }
            var entry = state.leases.removeValue(forKey: lease) ?? Lease(ids: [], held: [], attempts: [], outstanding: 0,
                                                                             sessionsOpened: first.sessionEpoch)
            entry.ids += adding.lazy.map(\.id)
            entry.held += repeatElement(true, count: adding.count)
            entry.attempts += adding.lazy.map(\.attempts)
            entry.outstanding += adding.count
            if zip(entry.ids, entry.ids.dropFirst()).contains(where: { $0 > $1 }) {
                let order = entry.ids.indices.sorted { entry.ids[$0] < entry.ids[$1] }
                (entry.ids, entry.held, entry.attempts) = (order.map { entry.ids[$0] }, order.map { entry.held[$0] },
                                                           order.map { entry.attempts[$0] })
            }
            state.leases[lease] = entry
            return starting
        }
    }

    /// Written, fenced, abandoned or released: no longer this process's to finish. Jobs of one
    /// claim come in runs (they finish together): their lease is looked up once per run.
    func letGo(_ released: some Sequence<ClaimedJob>) {
        state.withLock { state in
            var current: (id: Int, lease: Lease)?
            for job in released {
                if let lease = job.leaseID {
                    if current?.id != lease {
                        if let (id, entry) = current { state.put(entry, as: id) }
                        current = state.leases.removeValue(forKey: lease).map { (lease, $0) }
                    }
                    if current?.lease.letGo(job.id) == true { state.count -= 1 }
                } else if state.unleased.removeValue(forKey: job.id) != nil {
                    state.count -= 1
                }
                if !state.superseded.isEmpty { state.superseded.remove(job.run) }
                // Taken again by a later claim while it ran here: let go of under that claim's lease too.
                if !state.alsoUnder.isEmpty, let later = state.alsoUnder.removeValue(forKey: job.id) {
                    if !state.superseded.isEmpty {
                        state.superseded.remove(JobRun(jobID: job.id, leaseID: later, attempt: job.attempts))
                    }
                    if later == current?.id {
                        _ = current?.lease.letGo(job.id)
                    } else if var entry = state.leases.removeValue(forKey: later) {
                        _ = entry.letGo(job.id)
                        state.put(entry, as: later)
                    }
                }
            }
            if let (id, entry) = current { state.put(entry, as: id) }
        }
    }

    /// Lease rows whose jobs are all let go, each returned once: `settled`, claimed when the pool
    /// had already opened `sessionsOpened` sessions (as many as now); `unsure`, the others.
    func takeDroppableLeases(sessionsOpened: Int) -> DroppableLeases {
        state.withLock { state in
            defer { state.droppable.removeAll() }
            var leases = DroppableLeases()
            for lease in state.droppable {
                if lease.sessionsOpened == sessionsOpened { leases.settled.append(lease.id) } else { leases.unsure.append(lease.id) }
            }
            return leases
        }
    }

    /// The runs of `batch` superseded by a later claim of their job: their results are stale, and
    /// written beside the later run's (the lease check names the worker, not the run) the job
    /// would be announced twice. One lock per batch; usually none.
    func superseded(among batch: some Sequence<ClaimedJob>) -> Set<JobRun> {
        state.withLock { state in
            guard !state.superseded.isEmpty else { return [] }
            var found: Set<JobRun> = []
            for job in batch where state.superseded.contains(job.run) { found.insert(job.run) }
            return found
        }
    }

    var snapshot: [Int] {
        state.withLock { state in
            Array(state.unleased.keys) + state.leases.values.flatMap { lease in zip(lease.ids, lease.held).lazy.filter(\.1).map(\.0) }
        }
    }

    /// Leases held, verifying or waiting for their result to be written.
    var count: Int { state.withLock { $0.count } }
}

/// Lease rows due to be deleted (`HeldJobs.takeDroppableLeases`).
struct DroppableLeases: Sendable, Equatable {
    /// Every job written on a session that existed at the claim: deleted as they are.
    var settled: [Int] = []
    /// A session was opened since the claim: deleted only where no job still runs on them.
    var unsure: [Int] = []
}

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
        var outstanding: Int
        let sessionsOpened: Int

        /// Whether `id` was held here (and is no longer).
        mutating func letGo(_ id: Int) -> Bool {
            var (low, high) = (0, ids.count)
            while low < high {
                let middle = (low + high) / 2
                if ids[middle] < id { low = middle + 1 } else { high = middle }
            }
            guard low < ids.count, ids[low] == id, held[low] else { return false }
            held[low] = false
            outstanding -= 1
            return true
        }
    }
    private struct State {
        var leases: [Int: Lease] = [:]
        /// Jobs claimed without a lease row.
        var unleased: Set<Int> = []
        var count = 0
        var droppable: [(id: Int, sessionsOpened: Int)] = []

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

    /// Holds one claim's jobs; the claim's session count is its jobs' (`ClaimedJob.sessionEpoch`,
    /// read before the claim was sent), not the pool's now: a session opened while the claim was
    /// in flight makes its lease row unsure.
    func hold(_ claimed: [ClaimedJob]) {
        guard let first = claimed.first else { return }
        state.withLock { state in
            state.count += claimed.count
            // One claim, one lease row.
            guard let lease = first.leaseID else {
                state.unleased.formUnion(claimed.lazy.map(\.id))
                return
            }
            var entry = state.leases.removeValue(forKey: lease) ?? Lease(ids: [], held: [], outstanding: 0, sessionsOpened: first.sessionEpoch)
            entry.ids += claimed.lazy.map(\.id)
            entry.held += repeatElement(true, count: claimed.count)
            entry.outstanding += claimed.count
            if zip(entry.ids, entry.ids.dropFirst()).contains(where: { $0 > $1 }) {
                let order = entry.ids.indices.sorted { entry.ids[$0] < entry.ids[$1] }
                (entry.ids, entry.held) = (order.map { entry.ids[$0] }, order.map { entry.held[$0] })
            }
            state.leases[lease] = entry
        }
    }

    /// Written, fenced, abandoned or released: no longer this process's to finish. Jobs of one
    /// claim come in runs (they finish together): their lease is looked up once per run.
    func letGo(_ released: some Sequence<ClaimedJob>) {
        state.withLock { state in
            var current: (id: Int, lease: Lease)?
            for job in released {
                guard let lease = job.leaseID else {
                    if state.unleased.remove(job.id) != nil { state.count -= 1 }
                    continue
                }
                if current?.id != lease {
                    if let (id, entry) = current { state.put(entry, as: id) }
                    current = state.leases.removeValue(forKey: lease).map { (lease, $0) }
                }
                if current?.lease.letGo(job.id) == true { state.count -= 1 }
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

    var snapshot: [Int] {
        state.withLock { state in
            Array(state.unleased) + state.leases.values.flatMap { lease in zip(lease.ids, lease.held).lazy.filter(\.1).map(\.0) }
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

import Synchronization

/// The jobs this process holds a lease on and still means to finish: claimed, verifying, or
/// waiting for their completion to be written. Any other job leased to this worker id was
/// orphaned (a claim whose reply was lost) and is handed back (`QueueStore.claim(handingBackAllBut:)`).
///
/// It also knows each job's claim (its row in iap.job_leases, migration 0029): once every job of
/// a claim is let go, the row is due to be deleted (`takeDroppableLeases`), so the lease rows
/// the rescuer, the hand-back and the statistics read stay as few as the claims in flight.
final class HeldJobs: Sendable {
    private struct State {
        var leaseOf: [Int: Int?] = [:]
        var outstanding: [Int: Int] = [:]
        var droppable: [Int] = []
    }
    private let state = Mutex(State())

    func hold(_ claimed: [ClaimedJob]) {
        guard let first = claimed.first else { return }
        state.withLock { state in
            state.leaseOf.reserveCapacity(state.leaseOf.count + claimed.count)
            for job in claimed { state.leaseOf[job.id] = job.leaseID }
            // One claim, one lease row: counted once.
            if let lease = first.leaseID { state.outstanding[lease, default: 0] += claimed.count }
        }
    }

    /// Written, fenced, abandoned or released: no longer this process's to finish.
    func letGo(_ released: some Sequence<Int>) {
        state.withLock { state in
            for id in released {
                guard let entry = state.leaseOf.removeValue(forKey: id), let lease = entry else { continue }
                let left = state.outstanding[lease, default: 1] - 1
                if left > 0 {
                    state.outstanding[lease] = left
                } else {
                    state.outstanding[lease] = nil
                    state.droppable.append(lease)
                }
            }
        }
    }

    /// Lease rows whose jobs are all let go, each returned once.
    func takeDroppableLeases() -> [Int] {
        state.withLock { state in
            defer { state.droppable.removeAll() }
            return state.droppable
        }
    }

    var snapshot: [Int] { state.withLock { Array($0.leaseOf.keys) } }

    /// Leases held, verifying or waiting for their result to be written.
    var count: Int { state.withLock { $0.leaseOf.count } }
}

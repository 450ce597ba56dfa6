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
    private struct Lease {
        var outstanding: Int
        let sessionsOpened: Int
    }
    private struct State {
        var leaseOf: [Int: Int?] = [:]
        var leases: [Int: Lease] = [:]
        var droppable: [(id: Int, sessionsOpened: Int)] = []
    }
    private let state = Mutex(State())

    func hold(_ claimed: [ClaimedJob], sessionsOpened: Int) {
        guard let first = claimed.first else { return }
        state.withLock { state in
            state.leaseOf.reserveCapacity(state.leaseOf.count + claimed.count)
            for job in claimed { state.leaseOf[job.id] = job.leaseID }
            // One claim, one lease row: counted once.
            if let lease = first.leaseID {
                state.leases[lease, default: Lease(outstanding: 0, sessionsOpened: sessionsOpened)].outstanding += claimed.count
            }
        }
    }

    /// Written, fenced, abandoned or released: no longer this process's to finish.
    func letGo(_ released: some Sequence<Int>) {
        state.withLock { state in
            for id in released {
                guard let entry = state.leaseOf.removeValue(forKey: id), let lease = entry,
                      var held = state.leases[lease] else { continue }
                held.outstanding -= 1
                if held.outstanding > 0 {
                    state.leases[lease] = held
                } else {
                    state.leases[lease] = nil
                    state.droppable.append((lease, held.sessionsOpened))
                }
            }
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

    var snapshot: [Int] { state.withLock { Array($0.leaseOf.keys) } }

    /// Leases held, verifying or waiting for their result to be written.
    var count: Int { state.withLock { $0.leaseOf.count } }
}

/// Lease rows due to be deleted (`HeldJobs.takeDroppableLeases`).
struct DroppableLeases: Sendable, Equatable {
    /// Every job written on a session that existed at the claim: deleted as they are.
    var settled: [Int] = []
    /// A session was opened since the claim: deleted only where no job still runs on them.
    var unsure: [Int] = []
}

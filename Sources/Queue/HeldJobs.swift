import Synchronization

/// The jobs this process holds a lease on and still means to finish: claimed, verifying, or
/// waiting for their completion to be written. Any other job leased to this worker id was
/// orphaned (a claim whose reply was lost) and is handed back (`QueueStore.claim(handingBackAllBut:)`).
final class HeldJobs: Sendable {
    private let ids = Mutex<Set<Int>>([])

    func hold(_ claimed: [Int]) { ids.withLock { $0.formUnion(claimed) } }

    /// Written, fenced, abandoned or released: no longer this process's to finish.
    func letGo(_ released: some Sequence<Int>) { ids.withLock { $0.subtract(released) } }

    var snapshot: [Int] { ids.withLock { Array($0) } }

    /// Leases held, verifying or waiting for their result to be written.
    var count: Int { ids.withLock { $0.count } }
}

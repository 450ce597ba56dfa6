import Synchronization

/// Payloads of the jobs this process sent back for a retry. When it claims one of
/// them again, it names them in the claim, which then leaves their payload out (a receipt is
/// kilobytes of base64, read from iap.job_requests and sent over the wire on every attempt), and
/// the job takes it from here. Bounded: past `capacity` the oldest entries go first; a job whose
/// entry went meanwhile has its payload read again (`QueueStore.claim`).
///
/// An entry holds only on the sessions it was learnt on: a job id names the same job only on
/// the server that handed it out. After a reconnect (maybe to a standby promoted without the
/// last commits, which hands the same ids to new jobs) an older entry could give one buyer's
/// receipt to another buyer's job, so entries are kept by the pool's session epoch
/// (`PostgresClient.sessionsOpened`) and count for that epoch alone.
final class PayloadCache: Sendable {
    static let defaultCapacity = 1_000

    private struct Entry {
        let payload: String
        let epoch: Int
    }

    private struct Entries {
        var payloads: [Int: Entry] = [:]
        /// Insertion order; ids taken since stay here until they reach the front.
        var order: [Int] = []
        var front = 0
    }

    private let entries = Mutex(Entries())
    let capacity: Int

    init(capacity: Int = defaultCapacity) { self.capacity = capacity }

    func remember(_ id: Int, payload: String, epoch: Int) {
        entries.withLock { entries in
            if entries.payloads.updateValue(Entry(payload: payload, epoch: epoch), forKey: id) == nil { entries.order.append(id) }
            while entries.payloads.count > capacity, entries.front < entries.order.count {
                entries.payloads[entries.order[entries.front]] = nil
                entries.front += 1
            }
            if entries.front > capacity {
                entries.order.removeFirst(entries.front)
                entries.front = 0
            }
        }
    }

    /// The ids whose payload a claim in `epoch` may leave out.
    func ids(epoch: Int) -> [Int] { entries.withLock { $0.payloads.compactMap { $0.value.epoch == epoch ? $0.key : nil } } }

    /// The payload of a job claimed in `epoch`, once (a job that comes back for another retry is
    /// remembered again); nil when the entry is of another epoch.
    func take(_ id: Int, epoch: Int) -> String? {
        entries.withLock { entries in
            entries.payloads.removeValue(forKey: id).flatMap { $0.epoch == epoch ? $0.payload : nil }
        }
    }

    var count: Int { entries.withLock { $0.payloads.count } }
}

import Synchronization

/// Payloads of the jobs this process sent back for a retry. When it claims one of
/// them again, it names them in the claim, which then leaves their payload out (a receipt is
/// kilobytes of base64, read from iap.job_requests and sent over the wire on every attempt), and
/// the job takes it from here. Bounded: past `capacity` the oldest entries go first; a job whose
/// entry went meanwhile has its payload read again (`QueueStore.claim`).
final class PayloadCache: Sendable {
    static let defaultCapacity = 1_000

    private struct Entries {
        var payloads: [Int: String] = [:]
        /// Insertion order; ids taken since stay here until they reach the front.
        var order: [Int] = []
        var front = 0
    }

    private let entries = Mutex(Entries())
    let capacity: Int

    init(capacity: Int = defaultCapacity) { self.capacity = capacity }

    func remember(_ id: Int, payload: String) {
        entries.withLock { entries in
            if entries.payloads.updateValue(payload, forKey: id) == nil { entries.order.append(id) }
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

    /// The ids whose payload the next claim may leave out.
    var ids: [Int] { entries.withLock { Array($0.payloads.keys) } }

    /// The payload of a claimed job, once (a job that comes back for another retry is remembered again).
    func take(_ id: Int) -> String? { entries.withLock { $0.payloads.removeValue(forKey: id) } }

    var count: Int { entries.withLock { $0.payloads.count } }
}

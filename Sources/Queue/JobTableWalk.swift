import Synchronization

/// The leader's searches that must look at every job (jobs no side set holds as their state
/// says; running jobs no lease row names) read `iap.job_queue` one slice of ids per run: the
/// whole table once per `period`, in even slices, instead of all of it when a process becomes
/// leader and again every period. The total read is the same; the burst is gone (a table of tens
/// of millions of jobs read whole is seconds of a core and gigabytes read, when a failover's
/// backlog is being claimed). The walk goes from the newest id down: new jobs are the likeliest
/// strays (an enqueue by an earlier build) and the ones whose buyers are waiting.
public final class JobTableWalk: Sendable {
    /// Seconds to walk the whole table.
    public let period: Double
    /// Seconds between slices (the duty's interval).
    public let interval: Double
    /// No slice is smaller (a small table is read more often than once a period, cheaply).
    public let smallestSlice: Int
    /// The highest id of the next slice; nil: the table's newest id.
    private let next = Mutex<Int?>(nil)

    public init(period: Double = 600, interval: Double, smallestSlice: Int = 1_000) {
        self.period = max(period, interval)
        self.interval = max(0.001, interval)
        self.smallestSlice = max(1, smallestSlice)
    }

    /// The ids to read now from the jobs table (its ends read now, two index lookups); nil while it is empty.
    func nextSlice(of store: QueueStore, under term: LeaderTerm) async throws -> ClosedRange<Int>? {
        guard let bounds = try await store.jobIDBounds(under: term) else { return nil }
        return slice(first: bounds.first, last: bounds.last)
    }

    /// The ids to read now in a table whose ids run from `first` to `last`; after the slice that
    /// reaches `first` the walk starts again from the newest id.
    public func slice(first: Int, last: Int) -> ClosedRange<Int> {
        guard last > first else { return min(first, last)...max(first, last) }
        return next.withLock { next in
            let top = next.map { $0 < first ? last : min($0, last) } ?? last
            let share = (Double(last) - Double(first) + 1) * interval / period
            let span = max(smallestSlice, Int(share.rounded(.up)))
            let bottom = top - first < span ? first : top - span + 1
            next = bottom == first ? nil : bottom - 1
            return bottom...top
        }
    }
}

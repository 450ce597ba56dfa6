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
    /// A pass under way: where its next slice starts (nil once it reached the bottom), and the
    /// bottom and slice size read off the table's ends when it began.
    private struct Pass {
        var next: Int?
        let first: Int
        let span: Int
    }
    private let pass = Mutex<Pass?>(nil)

    public init(period: Double = 600, interval: Double, smallestSlice: Int = 1_000) {
        self.period = max(period, interval)
        self.interval = max(0.001, interval)
        self.smallestSlice = max(1, smallestSlice)
    }

    /// The ids to read now from the jobs table; nil while it is empty. The table's ends are read
    /// when a pass begins, not on every run: after the retention duty deletes old jobs, `min(id)`
    /// steps over their index entries until a vacuum (5–6 ms for 500,000 of them, every few
    /// seconds from the lease rescuer). Ids below the first only grow old and go; jobs made
    /// during a pass are in the next one.
    func nextSlice(of store: QueueStore, under term: LeaderTerm) async throws -> ClosedRange<Int>? {
        if let slice = sliceOfPassUnderWay() { return slice }
        guard let bounds = try await store.jobIDBounds(under: term) else { return nil }
        return slice(first: bounds.first, last: bounds.last)
    }

    /// The next slice of the pass under way, from the ends read when it began; nil when a new pass is due.
    public func sliceOfPassUnderWay() -> ClosedRange<Int>? {
        pass.withLock { pass in
            guard let current = pass, let top = current.next else { return nil }
            let (slice, next) = Self.cut(from: top, down: current.first, span: current.span)
            pass?.next = next
            return slice
        }
    }

    /// The ids to read now in a table whose ids run from `first` to `last`; after the slice that
    /// reaches `first` the walk starts again from the newest id.
    public func slice(first: Int, last: Int) -> ClosedRange<Int> {
        guard last > first else { return min(first, last)...max(first, last) }
        return pass.withLock { pass in
            let top = pass?.next.map { $0 < first ? last : min($0, last) } ?? last
            let share = (Double(last) - Double(first) + 1) * interval / period
            let span = max(smallestSlice, Int(share.rounded(.up)))
            let (slice, next) = Self.cut(from: top, down: first, span: span)
            pass = Pass(next: next, first: first, span: span)
            return slice
        }
    }

    /// The slice of `span` ids from `top` down (not below `first`), and where the next one starts (nil: the pass is done).
    private static func cut(from top: Int, down first: Int, span: Int) -> (slice: ClosedRange<Int>, next: Int?) {
        let bottom = top - first < span ? first : top - span + 1
        return (bottom...top, bottom == first ? nil : bottom - 1)
    }
}

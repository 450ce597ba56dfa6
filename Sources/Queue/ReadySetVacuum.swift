import Synchronization

/// Vacuums the ready set (`iap.job_ready`) when claims have left enough dead rows in it. A claim
/// deletes the ready rows it takes, and their index entries stay until a vacuum; they lie at the
/// front of the `(run_at, id)` index, where every claim's scan starts, and nothing else removes
/// them there (new entries go in at the other end, so those pages never split). Every claim
/// walks all of them, and autovacuum visits a table at most once a minute
/// (`scripts/ready-set-dead-rows.py` shows the cost). A vacuum reads the whole table and its
/// indexes, so it waits for at least as many dead rows as live ones (a backlog of millions is
/// left to autovacuum), and dead rows a vacuum could not remove (an old snapshot still sees
/// them) are not counted again until something else removed them.
public struct ReadySetVacuum: MaintenanceTask {
    public let name = "ready_set_vacuum"
    public static let defaultInterval: Double = 5
    public static let defaultDeadRows = 10_000
    public let interval: Double
    let deadRows: Int
    let store: QueueStore
    private let leftBehind = LeftBehind()

    public init(store: QueueStore, interval: Double = ReadySetVacuum.defaultInterval, deadRows: Int = ReadySetVacuum.defaultDeadRows) {
        self.store = store
        self.interval = interval
        self.deadRows = max(1, deadRows)
    }

    public func run(term: LeaderTerm) async throws {
        let rows = try await store.readySetRows()
        let stillThere = min(leftBehind.rows.load(ordering: .relaxed), rows.dead)
        guard rows.dead - stillThere >= max(deadRows, rows.live) else { return }
        try term.check()
        try await store.vacuumReadySet()
        leftBehind.rows.store(try await store.readySetRows().dead, ordering: .relaxed)
    }

    /// Dead rows the last vacuum left.
    private final class LeftBehind: Sendable {
        let rows = Atomic<Int>(0)
    }
}

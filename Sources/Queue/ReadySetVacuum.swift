import Observability
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
///
/// Only the table's owner (or the database's, or a superuser) may vacuum it; for any other role
/// PostgreSQL skips the table with a warning in its own log. The duty asks first, and says so
/// once (`ready_set_vacuum_not_permitted`) instead of vacuuming in vain.
public struct ReadySetVacuum: MaintenanceTask {
    public let name = "ready_set_vacuum"
    public static let defaultInterval: Double = 5
    public static let defaultDeadRows = 10_000
    public let interval: Double
    let deadRows: Int
    let store: QueueStore
    let logger: Logger
    private let memory = Memory()

    public init(store: QueueStore, interval: Double = ReadySetVacuum.defaultInterval, deadRows: Int = ReadySetVacuum.defaultDeadRows,
                logger: Logger) {
        self.store = store
        self.interval = interval
        self.deadRows = max(1, deadRows)
        self.logger = logger
    }

    public func run(term: LeaderTerm) async throws {
        let rows = try await store.readySetRows()
        let stillThere = min(memory.deadRowsLeft.load(ordering: .relaxed), rows.dead)
        guard rows.dead - stillThere >= max(deadRows, rows.live) else { return }
        guard try await store.mayVacuumReadySet() else {
            if !memory.refusalReported.exchange(true, ordering: .relaxed) {
                logger.warning("ready_set_vacuum_not_permitted", [
                    "table": .string("iap.job_ready"), "dead_rows": .int(rows.dead),
                    "hint": .string("the role the workers connect as must own iap.job_ready; until then autovacuum alone clears it"),
                ])
            }
            return
        }
        memory.refusalReported.store(false, ordering: .relaxed) // a later refusal is reported again
        try term.check()
        try await store.vacuumReadySet()
        memory.deadRowsLeft.store(try await store.readySetRows().dead, ordering: .relaxed)
    }

    /// What the duty keeps between runs.
    private final class Memory: Sendable {
        /// Dead rows the last vacuum left.
        let deadRowsLeft = Atomic<Int>(0)
        /// The refusal to vacuum has been logged (and not lifted since).
        let refusalReported = Atomic<Bool>(false)
    }
}

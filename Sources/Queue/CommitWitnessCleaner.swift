import Observability

/// Deletes commit witnesses (migration 0016) past their retention (days by default: a worker
/// cut off for hours must still find its witness). A tombstone goes only when no transaction
/// that began before it is still open, since it is what keeps such a transaction from ever
/// committing. A single statement: safe when two leaders overlap.
public struct CommitWitnessCleaner: MaintenanceTask {
    public let name = "commit_witness_cleaner"
    public let interval: Double
    let store: QueueStore
    let retention: Double
    let logger: Logger

    public init(store: QueueStore, interval: Double = 60, retention: Double = 604_800, logger: Logger) {
        self.store = store
        self.interval = interval
        self.retention = retention
        self.logger = logger
    }

    public func run(term: LeaderTerm) async throws {
        let deleted = try await store.deleteWitnesses(olderThan: retention, under: term)
        if deleted > 0 { logger.debug("commit_witnesses_deleted", ["rows": .int(deleted)]) }
    }
}

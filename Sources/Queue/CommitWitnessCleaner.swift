import Observability

/// Deletes commit witnesses (migration 0016) once no ambiguous COMMIT can still ask for them:
/// a resolution happens within a reconnect, so an hour is ample. A single statement: safe
/// when two leaders overlap.
public struct CommitWitnessCleaner: MaintenanceTask {
    public let name = "commit_witness_cleaner"
    public let interval: Double
    let store: QueueStore
    let retention: Double
    let logger: Logger

    public init(store: QueueStore, interval: Double = 60, retention: Double = 3_600, logger: Logger) {
        self.store = store
        self.interval = interval
        self.retention = retention
        self.logger = logger
    }

    public func run(term: LeaderTerm) async throws {
        let deleted = try await store.deleteWitnesses(olderThan: retention)
        if deleted > 0 { logger.debug("commit_witnesses_deleted", ["rows": .int(deleted)]) }
    }
}

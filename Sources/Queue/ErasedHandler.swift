import Postgres

/// A verifier's answer with the handler's `Work` type erased: what the engine carries from a
/// job's task to the completer. Indirect (one pointer), for the reason `Verification` is.
indirect enum JobVerdict: Sendable {
    case decided(JobOutcome)
    case settle(any Sendable)

    var settles: Bool {
        if case .settle = self { return true }
        return false
    }
}

/// A `JobHandler` behind closures, built once per worker. The engine (worker, completer, their
/// bookkeeping) is concrete code: generic over the handler, every job's result would be copied
/// through value witnesses and look up generic metadata at run time, since the engine is
/// compiled apart from the handlers it runs.
struct ErasedHandler: Sendable {
    let verify: @Sendable (ClaimedJob) async -> JobVerdict
    let settle: @Sendable (_ items: [(job: ClaimedJob, work: any Sendable)], _ connection: PostgresConnection) async throws -> SettledBatch
    let didCommit: @Sendable ([JobRun]) -> Void
    let didRollBack: @Sendable ([JobRun]) -> Void

    init<Handler: JobHandler>(_ handler: Handler) {
        verify = { job in
            switch await handler.verify(job) {
            case .decided(let outcome): .decided(outcome)
            case .settle(let work): .settle(work)
            }
        }
        settle = { items, connection in
            // Each `work` came from this handler's own `verify` above.
            try await handler.settle(items.map { SettlementItem(job: $0.job, work: $0.work as! Handler.Work) }, on: connection)
        }
        didCommit = { handler.didCommit($0) }
        didRollBack = { handler.didRollBack($0) }
    }
}

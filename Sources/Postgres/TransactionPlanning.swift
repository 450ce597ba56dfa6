/// How a transaction's prepared statements are planned on a direct session (behind a pooler
/// nothing is prepared, and every statement is planned for its run).
public enum TransactionPlanning: Sendable {
    /// Planned for each run's parameters (the session's default).
    case perRun
    /// One plan per statement and session, made with sequential scans priced out: for
    /// fixed-shape statements that find their rows by key (the worker's completion).
    case reused
}

/// Whether a transaction's COMMIT waits until its WAL is on disk (and on a synchronous standby).
public enum CommitDurability: Sendable {
    /// The session's default: the reply to COMMIT means the transaction survives a crash.
    case flushed
    /// COMMIT replies before the flush (`synchronous_commit = off`): a crash or failover within
    /// a fraction of a second may undo the transaction. Only for a transaction whose loss is
    /// harmless: any later transaction that read its effects and committed flushed it too, since
    /// the log is flushed in order.
    case unflushed
}

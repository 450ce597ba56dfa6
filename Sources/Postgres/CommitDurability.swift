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

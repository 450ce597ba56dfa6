/// How a transaction's prepared statements are planned on a direct session (behind a pooler
/// nothing is prepared, and every statement is planned for its run).
public enum TransactionPlanning: Sendable {
    /// Planned for each run's parameters (the session's default).
    case perRun
    /// One plan per statement and session, made with sequential scans priced out: for
    /// fixed-shape statements that find their rows by key (the worker's completion).
    case reused
}

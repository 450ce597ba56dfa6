/// The benchmarks' "is anything left to do" poll, asked every few milliseconds while a drain is
/// measured: one probe per partial index (jobs_runnable, jobs_running_lease), so that it never
/// walks the finished jobs. Each reads a column the index lacks (`attempts`): a plain index
/// scan marks the entries of claimed and finished jobs dead as it passes them, so the next poll
/// skips them. An index-only scan (`SELECT 1`) never marks them, and every poll walked the
/// whole drain's dead entries again: that poll cost a third of the machine during `bench queue`.
enum QueueProbe {
    static let unfinishedSQL = """
        SELECT EXISTS (SELECT attempts FROM iap.job_queue WHERE state IN ('queued', 'retrying') ORDER BY run_at, id LIMIT 1)
            OR EXISTS (SELECT attempts FROM iap.job_queue WHERE state = 'running' ORDER BY lease_expires_at LIMIT 1)
        """
}

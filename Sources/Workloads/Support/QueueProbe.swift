/// The benchmarks' "is anything left to do" poll, asked every few milliseconds while a drain is
/// measured: through the ready set and the claims' lease rows (migration 0029), so that it never
/// walks the finished jobs that a `state IN (…)` scan of the table would read first.
enum QueueProbe {
    static let unfinishedSQL = """
        SELECT EXISTS (SELECT 1 FROM iap.job_ready)
            OR EXISTS (SELECT 1 FROM iap.job_queue WHERE id = ANY(ARRAY(SELECT unnest(job_ids) FROM iap.job_leases)) AND state = 'running')
        """
}

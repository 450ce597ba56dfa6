/// The benchmarks' own statements on the queue's tables.
enum QueueProbe {
    /// The "is anything left to do" poll, asked every few milliseconds while a drain is measured:
    /// through the ready set and the claims' lease rows (migration 0029), so that it never walks
    /// the finished jobs that a `state IN (…)` scan of the table would read first.
    static let unfinishedSQL = """
        SELECT EXISTS (SELECT 1 FROM iap.job_ready)
            OR EXISTS (SELECT 1 FROM iap.job_queue WHERE id = ANY(ARRAY(SELECT unnest(job_ids) FROM iap.job_leases)) AND state = 'running')
        """

    /// After a benchmark has loaded or removed jobs, outside its timings: the planner's statistics
    /// and the dead rows settled now rather than by an autovacuum during the next measurement.
    static let vacuumJobTablesSQL = "VACUUM ANALYZE iap.job_queue, iap.job_requests, iap.job_ready"
}

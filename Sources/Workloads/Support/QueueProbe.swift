/// The benchmarks' "is anything left to do" poll, asked every few milliseconds while a drain is
/// measured: one EXISTS per partial index (jobs_runnable, jobs_running_lease), so that it never
/// walks the finished jobs that a single `state IN (…)` scan would read first.
enum QueueProbe {
    static let unfinishedSQL = """
        SELECT EXISTS (SELECT 1 FROM iap.job_queue WHERE state IN ('queued', 'retrying'))
            OR EXISTS (SELECT 1 FROM iap.job_queue WHERE state = 'running')
        """
}

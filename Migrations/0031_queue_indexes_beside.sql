-- migrate: no-transaction
-- The queue's state beside the table, step 3 of 3: every reader goes through the side tables of
-- 0029, so iap.job_queue keeps its primary key only. A claim then changes no indexed column and
-- neither does a completion: both are HOT updates when the job's page has room for the new row
-- version, which a fillfactor of 30 leaves (a claim of 1,000 takes whole pages at once, so a page
-- must hold a second version of every row on it). The fillfactor applies to pages written from
-- then on; older pages reach it as retention empties them.
--
-- CONCURRENTLY, one index at a time: workers keep running. Workers built before 0029 claim through
-- jobs_runnable; until they are replaced their claims read the table sequentially.
DROP INDEX CONCURRENTLY IF EXISTS iap.jobs_runnable;
DROP INDEX CONCURRENTLY IF EXISTS iap.jobs_running_lease;
DROP INDEX CONCURRENTLY IF EXISTS iap.jobs_timed_out;
DROP INDEX CONCURRENTLY IF EXISTS iap.jobs_done;
DROP INDEX CONCURRENTLY IF EXISTS iap.jobs_failed;
DROP INDEX CONCURRENTLY IF EXISTS iap.jobs_attention;
ALTER TABLE iap.job_queue SET (fillfactor = 30);

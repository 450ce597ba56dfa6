-- migrate: no-transaction
-- The ready set read in two halves: the jobs of even and of odd blocks of 1,024 ids, each half
-- with its own index by (run_at, id), in place of job_ready_due. A worker's two claims in flight
-- start in different halves (QueueStore.claimSQLByHalf): read from one index, the second passed
-- over and tried every row the first held locked, and both updated the same pages of
-- iap.job_queue at once. Blocks rather than odd and even ids, so that the two claims' rows lie on
-- different pages too.
--
-- CONCURRENTLY, each after a DROP, as in 0036: enqueues keep writing the ready set meanwhile, and
-- a run interrupted midway is repaired by running the migration again. Workers built before this
-- migration claim through job_ready_due; until they are replaced their claims read the ready set
-- sequentially (it holds the runnable jobs only).
DROP INDEX CONCURRENTLY IF EXISTS iap.job_ready_due_even_blocks;
CREATE INDEX CONCURRENTLY job_ready_due_even_blocks ON iap.job_ready (run_at, id) WHERE id / 1024 % 2 = 0;
DROP INDEX CONCURRENTLY IF EXISTS iap.job_ready_due_odd_blocks;
CREATE INDEX CONCURRENTLY job_ready_due_odd_blocks ON iap.job_ready (run_at, id) WHERE id / 1024 % 2 = 1;
DROP INDEX CONCURRENTLY IF EXISTS iap.job_ready_due;

-- migrate: no-transaction
-- The ready set readable in two halves: the jobs of even and of odd blocks of 1,024 ids, each half
-- with its own index by (run_at, id), beside job_ready_due. A claim that runs beside another of
-- the same worker reads its own half first (QueueStore.claimSQLByHalf): read from job_ready_due,
-- the second claim passed over and tried every row the first held locked, and both updated the
-- same pages of iap.job_queue at once. Blocks rather than odd and even ids, so that the two
-- claims' rows lie on different pages too. A claim alone still reads job_ready_due, in order.
--
-- CONCURRENTLY, each after a DROP, as in 0036: enqueues keep writing the ready set meanwhile, and
-- a run interrupted midway is repaired by running the migration again.
DROP INDEX CONCURRENTLY IF EXISTS iap.job_ready_due_even_blocks;
CREATE INDEX CONCURRENTLY job_ready_due_even_blocks ON iap.job_ready (run_at, id) WHERE id / 1024 % 2 = 0;
DROP INDEX CONCURRENTLY IF EXISTS iap.job_ready_due_odd_blocks;
CREATE INDEX CONCURRENTLY job_ready_due_odd_blocks ON iap.job_ready (run_at, id) WHERE id / 1024 % 2 = 1;

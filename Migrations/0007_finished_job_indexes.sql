-- Queue statistics run every few seconds (the maintenance leader's gauges) and on every
-- `status`. Counting finished jobs row by row would read most of a table that keeps
-- RETENTION_DAYS of history; with one partial index per finished state, the planner's own
-- row count of each index (pg_class.reltuples, kept by autovacuum) is the estimate to use
-- once the exact count passes a cap. Retention reads the same two indexes.
CREATE INDEX jobs_done ON iap.jobs (finished_at) WHERE state = 'done';
CREATE INDEX jobs_failed ON iap.jobs (finished_at) WHERE state = 'failed';
-- Jobs waiting for a human: few, counted exactly.
CREATE INDEX jobs_attention ON iap.jobs (created_at) WHERE state = 'attention';
DROP INDEX iap.jobs_finished;

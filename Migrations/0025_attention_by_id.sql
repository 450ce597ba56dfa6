-- migrate: no-transaction
-- The console's jobs page filtered to `attention` lists the newest 51 by id. Since 0024 a job's row
-- is joined to its request, so with jobs_attention ordered by created_at every attention job is
-- joined before the newest are kept; ordered by id, the walk stops after 51. Nothing reads
-- attention jobs in created_at order (the queue's statistics count them, the overview and
-- credited-since read them all). Built CONCURRENTLY under a new name, then the old one dropped and
-- the new one given its name; a run interrupted anywhere is finished by running it again.
DROP INDEX CONCURRENTLY IF EXISTS iap.jobs_attention_by_id;
CREATE INDEX CONCURRENTLY jobs_attention_by_id ON iap.job_queue (id) WHERE state = 'attention';
DROP INDEX CONCURRENTLY IF EXISTS iap.jobs_attention;
ALTER INDEX iap.jobs_attention_by_id RENAME TO jobs_attention;

-- migrate: no-transaction
-- Splitting iap.jobs, step 2 of 3: copy the jobs enqueued before 0022 into iap.job_requests, in
-- batches of 5,000 that commit one by one (a DO block may COMMIT when it is not inside a
-- transaction block, which is how no-transaction migrations run), so no lock or snapshot is held
-- for the length of the copy and workers and enqueues carry on. Rows the trigger of 0022 already
-- copied are skipped (ON CONFLICT), so an interrupted run is finished by running it again.
DO $$
DECLARE
    v_after bigint := 0;
    v_last  bigint;
BEGIN
    LOOP
        SELECT max(id) INTO v_last FROM (SELECT id FROM iap.jobs WHERE id > v_after ORDER BY id LIMIT 5000) AS batch;
        EXIT WHEN v_last IS NULL;
        INSERT INTO iap.job_requests (id, kind, user_id, order_id, product_id, payload, dedup_key, created_at)
        SELECT id, kind, user_id, order_id, product_id, payload, dedup_key, created_at
        FROM iap.jobs WHERE id > v_after AND id <= v_last
        ON CONFLICT (id) DO NOTHING;
        v_after := v_last;
        COMMIT;
    END LOOP;
END
$$;

-- Then its indexes, CONCURRENTLY (iap.job_requests is as large as iap.jobs and written by every
-- enqueue), each after a DROP so that a build interrupted midway (an INVALID index) is repaired
-- by running the migration again, as in 0014.
-- Idempotent enqueue: the same (kind, user, order, payload) is one job.
DROP INDEX CONCURRENTLY IF EXISTS iap.job_requests_dedup;
CREATE UNIQUE INDEX CONCURRENTLY job_requests_dedup ON iap.job_requests (dedup_key);
-- The console's and the web tier's searches (0014's jobs_by_user and jobs_by_order, which 0024
-- drops with the columns they index on iap.jobs).
DROP INDEX CONCURRENTLY IF EXISTS iap.job_requests_by_user;
CREATE INDEX CONCURRENTLY job_requests_by_user ON iap.job_requests (user_id, id);
DROP INDEX CONCURRENTLY IF EXISTS iap.job_requests_by_order;
CREATE INDEX CONCURRENTLY job_requests_by_order ON iap.job_requests (order_id, id) WHERE order_id IS NOT NULL;

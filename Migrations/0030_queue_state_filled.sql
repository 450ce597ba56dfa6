-- migrate: no-transaction
-- The queue's state beside the table, step 2 of 3: the jobs that were already queued, retrying,
-- timed out, waiting for a human or failed when 0029's triggers took over get their side rows,
-- walked by id in batches of 20,000 that commit one by one (as 0023: no lock or snapshot held for
-- the length of the fill; workers and enqueues carry on). Each batch locks the rows it reads (FOR
-- SHARE): a job whose state changed since the batch's snapshot is read as it is now, and one
-- changing while the batch runs waits for it, so its trigger sees the row written here. A row the
-- triggers wrote first is kept (ON CONFLICT DO NOTHING); running it again is a no-op.
DO $$
DECLARE
    v_after bigint := 0;
    v_last  bigint;
BEGIN
    LOOP
        SELECT max(id) INTO v_last FROM (SELECT id FROM iap.job_queue WHERE id > v_after ORDER BY id LIMIT 20000) AS batch;
        EXIT WHEN v_last IS NULL;
        WITH side AS (
            SELECT id, state, run_at, coalesce(finished_at, created_at) AS finished_at FROM iap.job_queue
            WHERE id > v_after AND id <= v_last AND state IN ('queued', 'retrying', 'timed_out', 'attention', 'failed')
            FOR SHARE
        ), ready AS (
            INSERT INTO iap.job_ready (id, state, run_at)
            SELECT id, state, run_at FROM side WHERE state IN ('queued', 'retrying') ON CONFLICT (id) DO NOTHING
        ), parked AS (
            INSERT INTO iap.job_parked (id, run_at)
            SELECT id, run_at FROM side WHERE state = 'timed_out' ON CONFLICT (id) DO NOTHING
        )
        INSERT INTO iap.job_flagged (id, state, finished_at)
        SELECT id, state, finished_at FROM side WHERE state IN ('attention', 'failed') ON CONFLICT (id) DO NOTHING;
        v_after := v_last;
        COMMIT;
    END LOOP;
END
$$;

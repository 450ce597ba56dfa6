-- Splitting iap.jobs, step 1 of 3 (expand): the cold half of a job, written once at enqueue.
--
-- Every claim and completion changes jobs.state, a column in the partial indexes' predicates, so
-- no job update is HOT: each one writes an entry into every index of iap.jobs (the primary key,
-- jobs_dedup, the console's jobs_by_user and jobs_by_order) and copies the wide row (the payload
-- is a receipt or a JWS). What a claim never changes moves to iap.job_requests; the queue keeps
-- only what it updates (0024 renames iap.jobs to iap.job_queue and puts a view named iap.jobs in
-- its place).
--
-- Live: from this migration on, every row inserted into iap.jobs is copied here by a trigger, so
-- enqueues during 0023's backfill are captured. Its indexes are built CONCURRENTLY in 0023, after
-- the backfill; the primary key is needed now (the backfill and the trigger meet on it).
CREATE TABLE iap.job_requests (
    id         bigint PRIMARY KEY,       -- the job's id in iap.job_queue
    kind       text NOT NULL,
    user_id    text NULL,                -- NULL only for notifications and consumption jobs
    order_id   text NULL,
    product_id text NULL,
    payload    text NOT NULL,            -- receipt base64 / JWS / transaction id
    dedup_key  bytea NOT NULL,           -- iap.job_dedup_key(kind, user_id, order_id, payload)
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT job_requests_user_required CHECK (kind IN ('notification', 'consumption') OR user_id IS NOT NULL)
);

-- One statement-level trigger: a bulk load (BulkLoader's INSERT … SELECT) costs one extra
-- INSERT … SELECT, not one call per row.
CREATE FUNCTION iap.copy_new_job_requests() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO iap.job_requests (id, kind, user_id, order_id, product_id, payload, dedup_key, created_at)
    SELECT id, kind, user_id, order_id, product_id, payload, dedup_key, created_at FROM new_jobs
    ON CONFLICT (id) DO NOTHING;
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_copy_requests AFTER INSERT ON iap.jobs
    REFERENCING NEW TABLE AS new_jobs FOR EACH STATEMENT EXECUTE FUNCTION iap.copy_new_job_requests();

-- For the switch in 0024: an enqueue that waits on its lock is planned again once it gets it,
-- against what iap.jobs is by then, a view, on which ON CONFLICT is refused. Until 0024 replaces
-- it, enqueue_jobs inserts without ON CONFLICT and takes a repeat from the unique violation (a
-- subtransaction per enqueue, for the minutes of the migration), which works on either.
CREATE OR REPLACE FUNCTION iap.enqueue_jobs(p_kinds text[], p_user_ids text[], p_order_ids text[],
                                            p_product_ids text[], p_payloads text[])
RETURNS TABLE (ordinal int, job_id bigint, created boolean) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_key    bytea;
    v_notify boolean := false;
BEGIN
    FOR i IN 1 .. coalesce(array_length(p_kinds, 1), 0) LOOP
        IF p_payloads[i] IS NULL OR p_payloads[i] = '' THEN
            RAISE EXCEPTION 'payload must not be empty' USING ERRCODE = '22023';
        END IF;
        IF p_kinds[i] <> 'notification' AND (p_user_ids[i] IS NULL OR p_user_ids[i] = '') THEN
            RAISE EXCEPTION 'user_id must not be empty' USING ERRCODE = '22023';
        END IF;
        v_key := iap.job_dedup_key(p_kinds[i], p_user_ids[i], p_order_ids[i], p_payloads[i]);
        ordinal := i;
        job_id := NULL;
        BEGIN
            INSERT INTO iap.jobs (kind, user_id, order_id, product_id, payload, dedup_key)
            VALUES (p_kinds[i], p_user_ids[i], p_order_ids[i], p_product_ids[i], p_payloads[i], v_key)
            RETURNING id INTO job_id;
        EXCEPTION WHEN unique_violation THEN
            job_id := NULL;
        END;
        created := job_id IS NOT NULL;
        IF created THEN
            v_notify := true;
        ELSE
            SELECT id INTO job_id FROM iap.jobs WHERE dedup_key = v_key;
        END IF;
        RETURN NEXT;
    END LOOP;
    IF v_notify THEN
        PERFORM pg_notify('iap_jobs', '');
    END IF;
END
$$;

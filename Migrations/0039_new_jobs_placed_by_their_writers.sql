-- migrate: no-transaction
-- New jobs get their ready row from the statement that inserts them, no longer from the
-- statement trigger of 0029 on INSERT into iap.job_queue. The trigger gathered the inserted rows
-- into a transition table and ran three more INSERTs over it on every enqueue call; the enqueue's
-- batch now writes its ready rows in its own statement, and checks its input in one statement
-- instead of two.
--
-- Who places a new job now:
--   iap.enqueue_jobs (and the enqueue functions that call it), the bulk load of the ingest API
--   and the refund requests      write the ready row beside the job, in the same statement;
--   inserts through iap.jobs     the view's INSERT trigger places the job by its state;
--   anything else                a job inserted straight into iap.job_queue is placed by the
--                                leader's stray search (0038), or at once by
--                                `SELECT iap.place_jobs(ARRAY[…])`.
-- The DELETE trigger of 0029 stays: deletes are rare, and it keeps no side row behind.
--
-- Statement by statement (each its own transaction), functions first: while both the new enqueue
-- and the old trigger are in place, the trigger's upsert of a ready row the enqueue wrote is
-- harmless. An enqueue of the old function that is still running when the trigger goes leaves its
-- jobs to the stray search, which a worker of this build runs when it first becomes leader.

CREATE OR REPLACE FUNCTION iap.enqueue_jobs(p_kinds text[], p_user_ids text[], p_order_ids text[],
                                            p_product_ids text[], p_payloads text[])
RETURNS TABLE (ordinal int, job_id bigint, created boolean) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_key        bytea;
    v_no_payload boolean;
    v_no_user    boolean;
    v_ordinals   int[];
    v_keys       bytea[];
    v_ids        bigint[];
    v_created    boolean[];
BEGIN
    IF cardinality(p_kinds) = 1 THEN
        IF p_payloads[1] IS NULL OR p_payloads[1] = '' THEN
            RAISE EXCEPTION 'payload must not be empty' USING ERRCODE = '22023';
        END IF;
        IF p_kinds[1] <> 'notification' AND (p_user_ids[1] IS NULL OR p_user_ids[1] = '') THEN
            RAISE EXCEPTION 'user_id must not be empty' USING ERRCODE = '22023';
        END IF;
        v_key := iap.job_dedup_key(p_kinds[1], p_user_ids[1], p_order_ids[1], p_payloads[1]);
        ordinal := 1;
        job_id := NULL;
        INSERT INTO iap.job_requests (id, kind, user_id, order_id, product_id, payload, dedup_key)
        VALUES (nextval('iap.jobs_id_seq'::regclass), p_kinds[1], p_user_ids[1], p_order_ids[1], p_product_ids[1],
                p_payloads[1], v_key)
        ON CONFLICT (dedup_key) DO NOTHING
        RETURNING id INTO job_id;
        created := job_id IS NOT NULL;
        IF created THEN
            WITH queued AS (
                INSERT INTO iap.job_queue (id, kind) VALUES (job_id, p_kinds[1]) RETURNING id, state, run_at
            )
            INSERT INTO iap.job_ready (id, state, run_at) SELECT q.id, q.state, q.run_at FROM queued q;
            PERFORM pg_notify('iap_jobs', '');
        ELSE
            SELECT id INTO job_id FROM iap.job_requests WHERE dedup_key = v_key;
        END IF;
        RETURN NEXT;
        RETURN;
    END IF;
    SELECT coalesce(bool_or(x.payload IS NULL OR x.payload = ''), false),
           coalesce(bool_or(x.kind <> 'notification' AND (x.user_id IS NULL OR x.user_id = '')), false)
    INTO v_no_payload, v_no_user
    FROM unnest(p_kinds, p_user_ids, p_payloads) AS x(kind, user_id, payload);
    IF v_no_payload THEN
        RAISE EXCEPTION 'payload must not be empty' USING ERRCODE = '22023';
    END IF;
    IF v_no_user THEN
        RAISE EXCEPTION 'user_id must not be empty' USING ERRCODE = '22023';
    END IF;
    WITH input AS MATERIALIZED (
        SELECT x.ordinality::int AS ordinal, x.kind, x.user_id, x.order_id, x.product_id, x.payload,
               iap.job_dedup_key(x.kind, x.user_id, x.order_id, x.payload) AS dedup_key
        FROM unnest(p_kinds, p_user_ids, p_order_ids, p_product_ids, p_payloads)
             WITH ORDINALITY AS x(kind, user_id, order_id, product_id, payload, ordinality)
    ), made AS (
        INSERT INTO iap.job_requests (id, kind, user_id, order_id, product_id, payload, dedup_key)
        SELECT nextval('iap.jobs_id_seq'::regclass), i.kind, i.user_id, i.order_id, i.product_id, i.payload, i.dedup_key
        FROM input i ORDER BY i.ordinal
        ON CONFLICT (dedup_key) DO NOTHING
        RETURNING id, kind, dedup_key
    ), queued AS (
        INSERT INTO iap.job_queue (id, kind) SELECT m.id, m.kind FROM made m
        RETURNING id, state, run_at
    ), ready AS (
        INSERT INTO iap.job_ready (id, state, run_at) SELECT q.id, q.state, q.run_at FROM queued q
    )
    SELECT array_agg(r.ordinal ORDER BY r.ordinal), array_agg(r.dedup_key ORDER BY r.ordinal),
           array_agg(r.id ORDER BY r.ordinal), array_agg(r.created ORDER BY r.ordinal)
    INTO v_ordinals, v_keys, v_ids, v_created
    FROM (SELECT i.ordinal, i.dedup_key, m.id,
                 m.id IS NOT NULL AND i.ordinal = min(i.ordinal) OVER (PARTITION BY i.dedup_key) AS created
          FROM input i LEFT JOIN made m ON m.dedup_key = i.dedup_key) AS r;
    IF true = ANY(v_created) THEN
        PERFORM pg_notify('iap_jobs', '');
    END IF;
    -- A statement of its own: its snapshot sees a duplicate committed by another transaction
    -- while the INSERT waited on it.
    RETURN QUERY
    SELECT r.ordinal, coalesce(r.id, (SELECT q.id FROM iap.job_requests q WHERE q.dedup_key = r.dedup_key)), r.created
    FROM unnest(v_ordinals, v_keys, v_ids, v_created) AS r(ordinal, dedup_key, id, created);
END
$$;

-- A job inserted through the view is placed by the view: a runnable one (the usual case) by
-- one INSERT of its ready row, any other state by iap.place_jobs.
CREATE OR REPLACE FUNCTION iap.jobs_view_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.dedup_key := coalesce(NEW.dedup_key, iap.job_dedup_key(NEW.kind, NEW.user_id, NEW.order_id, NEW.payload));
    INSERT INTO iap.job_requests (id, kind, user_id, order_id, product_id, payload, dedup_key, created_at)
    VALUES (NEW.id, NEW.kind, NEW.user_id, NEW.order_id, NEW.product_id, NEW.payload, NEW.dedup_key, NEW.created_at);
    INSERT INTO iap.job_queue (id, kind, state, outcome, attempts, run_at, leased_by, lease_expires_at, apple_status,
                               last_error, transaction_ids, sweeps, created_at, finished_at)
    VALUES (NEW.id, NEW.kind, NEW.state, NEW.outcome, NEW.attempts, NEW.run_at, NEW.leased_by, NEW.lease_expires_at,
            NEW.apple_status, NEW.last_error, NEW.transaction_ids, NEW.sweeps, NEW.created_at, NEW.finished_at);
    IF NEW.state = 'running' THEN
        INSERT INTO iap.job_leases (leased_by, expires_at, job_ids) VALUES (NEW.leased_by, NEW.lease_expires_at, ARRAY[NEW.id]);
    ELSIF NEW.state IN ('queued', 'retrying') THEN
        INSERT INTO iap.job_ready (id, state, run_at) VALUES (NEW.id, NEW.state, NEW.run_at);
    ELSIF NEW.state <> 'done' THEN
        PERFORM iap.place_jobs(ARRAY[NEW.id]);
    END IF;
    RETURN NEW;
END
$$;

DROP TRIGGER IF EXISTS jobs_inserted ON iap.job_queue;

DROP FUNCTION IF EXISTS iap.jobs_inserted();

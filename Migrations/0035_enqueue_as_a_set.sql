-- Enqueue as one set: the batch's requests in one INSERT and their queue rows in another, so the
-- queue's statement trigger (which fills the ready set beside the table) fires once per batch
-- instead of once per job, and the per-row plpgsql loop is gone. Same contract as before: the
-- same validation and errors, one row back per input in order, a duplicate in the batch or in
-- the table returns the first job's id with `created` false, one NOTIFY when anything was new.
-- A batch of one (the web tier's `iap.enqueue_receipt` and friends, once per request) keeps the
-- single-row statements: for one row the set's fixed cost is about twice theirs.
CREATE OR REPLACE FUNCTION iap.enqueue_jobs(p_kinds text[], p_user_ids text[], p_order_ids text[],
                                            p_product_ids text[], p_payloads text[])
RETURNS TABLE (ordinal int, job_id bigint, created boolean) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_key      bytea;
    v_ordinals int[];
    v_keys     bytea[];
    v_ids      bigint[];
    v_created  boolean[];
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
            INSERT INTO iap.job_queue (id, kind) VALUES (job_id, p_kinds[1]);
            PERFORM pg_notify('iap_jobs', '');
        ELSE
            SELECT id INTO job_id FROM iap.job_requests WHERE dedup_key = v_key;
        END IF;
        RETURN NEXT;
        RETURN;
    END IF;
    IF EXISTS (SELECT 1 FROM unnest(p_kinds, p_user_ids, p_payloads) AS x(kind, user_id, payload)
               WHERE x.payload IS NULL OR x.payload = '') THEN
        RAISE EXCEPTION 'payload must not be empty' USING ERRCODE = '22023';
    END IF;
    IF EXISTS (SELECT 1 FROM unnest(p_kinds, p_user_ids) AS x(kind, user_id)
               WHERE x.kind <> 'notification' AND (x.user_id IS NULL OR x.user_id = '')) THEN
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

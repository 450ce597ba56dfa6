-- Group commit for the ingest process: the submissions that arrive while one write is in
-- flight are enqueued together, in one statement and one transaction, instead of one commit
-- each. iap.enqueue_job becomes a one-element call of the same function, so the rules
-- (validation, dedup key, NOTIFY) exist once.
CREATE FUNCTION iap.enqueue_jobs(p_kinds text[], p_user_ids text[], p_order_ids text[],
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
        INSERT INTO iap.jobs (kind, user_id, order_id, product_id, payload, dedup_key)
        VALUES (p_kinds[i], p_user_ids[i], p_order_ids[i], p_product_ids[i], p_payloads[i], v_key)
        ON CONFLICT (dedup_key) DO NOTHING
        RETURNING id INTO job_id;
        created := job_id IS NOT NULL;
        IF created THEN
            v_notify := true;
        ELSE
            SELECT id INTO job_id FROM iap.jobs WHERE dedup_key = v_key;
        END IF;
        RETURN NEXT;
    END LOOP;
    -- One wake-up per statement; identical notifications in one transaction collapse anyway.
    IF v_notify THEN
        PERFORM pg_notify('iap_jobs', '');
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION iap.enqueue_job(p_kind text, p_user_id text, p_order_id text, p_product_id text, p_payload text)
RETURNS bigint LANGUAGE sql AS $$
    SELECT job_id FROM iap.enqueue_jobs(ARRAY[p_kind], ARRAY[p_user_id], ARRAY[p_order_id], ARRAY[p_product_id], ARRAY[p_payload])
$$;

-- Enqueue functions for the web tier, callable inside its own transaction.
-- Re-submitting the same payload for the same user and order returns the existing job.

-- Length-prefixed so that no choice of values can collide with another.
CREATE FUNCTION iap.job_dedup_key(p_kind text, p_user_id text, p_order_id text, p_payload text)
RETURNS bytea LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT sha256(convert_to(
        p_kind || ':' || coalesce(length(p_user_id), -1) || ':' || coalesce(p_user_id, '')
        || ':' || coalesce(length(p_order_id), -1) || ':' || coalesce(p_order_id, '') || ':' || p_payload,
        'UTF8'))
$$;

CREATE FUNCTION iap.enqueue_job(p_kind text, p_user_id text, p_order_id text, p_product_id text, p_payload text)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    v_key bytea := iap.job_dedup_key(p_kind, p_user_id, p_order_id, p_payload);
    v_id  bigint;
BEGIN
    IF p_payload IS NULL OR p_payload = '' THEN
        RAISE EXCEPTION 'payload must not be empty' USING ERRCODE = '22023';
    END IF;
    IF p_kind <> 'notification' AND (p_user_id IS NULL OR p_user_id = '') THEN
        RAISE EXCEPTION 'user_id must not be empty' USING ERRCODE = '22023';
    END IF;
    INSERT INTO iap.jobs (kind, user_id, order_id, product_id, payload, dedup_key)
    VALUES (p_kind, p_user_id, p_order_id, p_product_id, p_payload, v_key)
    ON CONFLICT (dedup_key) DO NOTHING
    RETURNING id INTO v_id;
    IF v_id IS NULL THEN
        SELECT id INTO v_id FROM iap.jobs WHERE dedup_key = v_key;
    ELSE
        -- Identical notifications in one transaction collapse into one.
        PERFORM pg_notify('iap_jobs', '');
    END IF;
    RETURN v_id;
END
$$;

CREATE FUNCTION iap.enqueue_receipt(user_id text, order_id text, receipt_data text, product_id text DEFAULT NULL)
RETURNS bigint LANGUAGE sql AS $$
    SELECT iap.enqueue_job('receipt', $1, nullif($2, ''), nullif($4, ''), $3)
$$;

CREATE FUNCTION iap.enqueue_transaction(user_id text, order_id text, signed_transaction text)
RETURNS bigint LANGUAGE sql AS $$
    SELECT iap.enqueue_job('signed_transaction', $1, nullif($2, ''), NULL, $3)
$$;

CREATE FUNCTION iap.enqueue_notification(signed_payload text)
RETURNS bigint LANGUAGE sql AS $$
    SELECT iap.enqueue_job('notification', NULL, NULL, NULL, $1)
$$;

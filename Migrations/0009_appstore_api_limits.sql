-- One fleet-wide rate limit for the App Store Server API: a row per endpoint family, shared by
-- every process. A grant is one statement: it reserves the next slot (1/rate after the previous
-- one, never before a 429 pause ends, never past the hourly budget) and says how long to wait for
-- it, or refuses when the slot is further away than the caller is willing to wait.
CREATE TABLE iap.appstore_api_limits (
    family          text PRIMARY KEY,      -- transaction_info | notification_history | consumption | order_lookup
    next_slot_at    timestamptz NULL,      -- the earliest moment the next grant may be used
    paused_until    timestamptz NULL,      -- Apple's 429 Retry-After, for the whole fleet
    hour_started_at timestamptz NULL,      -- the hourly window (starts at its first grant)
    hour_used       int NOT NULL DEFAULT 0,
    throttled_at    timestamptz NULL       -- last 429 seen (for operators)
);
INSERT INTO iap.appstore_api_limits (family)
VALUES ('transaction_info'), ('notification_history'), ('consumption'), ('order_lookup');

CREATE FUNCTION iap.appstore_api_grant(p_family text, p_per_second float8, p_per_hour int, p_max_wait float8)
RETURNS TABLE (granted boolean, wait_seconds float8) LANGUAGE plpgsql AS $$
DECLARE
    v_row  iap.appstore_api_limits;
    v_now  timestamptz;
    v_slot timestamptz;
BEGIN
    IF p_per_second <= 0 OR p_per_hour <= 0 THEN
        RAISE EXCEPTION 'rates must be positive' USING ERRCODE = '22023';
    END IF;
    INSERT INTO iap.appstore_api_limits (family) VALUES (p_family) ON CONFLICT (family) DO NOTHING;
    SELECT * INTO v_row FROM iap.appstore_api_limits WHERE family = p_family FOR UPDATE;
    -- Read after the row lock: a grant that queued behind others measures its wait from now.
    v_now := clock_timestamp();
    v_slot := greatest(v_row.next_slot_at, v_now, v_row.paused_until);
    IF v_row.hour_started_at IS NOT NULL AND v_slot < v_row.hour_started_at + interval '1 hour'
       AND v_row.hour_used >= p_per_hour THEN
        v_slot := v_row.hour_started_at + interval '1 hour';
    END IF;
    wait_seconds := extract(epoch FROM v_slot - v_now);
    IF wait_seconds > p_max_wait THEN
        granted := false;
        RETURN NEXT;
        RETURN;
    END IF;
    IF v_row.hour_started_at IS NULL OR v_slot >= v_row.hour_started_at + interval '1 hour' THEN
        v_row.hour_started_at := v_slot;
        v_row.hour_used := 0;
    END IF;
    UPDATE iap.appstore_api_limits
    SET next_slot_at = v_slot + make_interval(secs => 1 / p_per_second),
        hour_started_at = v_row.hour_started_at,
        hour_used = v_row.hour_used + 1
    WHERE family = p_family;
    granted := true;
    RETURN NEXT;
END
$$;

-- Apple answered 429: nobody in the fleet sends to this family until the pause ends.
CREATE FUNCTION iap.appstore_api_pause(p_family text, p_seconds float8)
RETURNS void LANGUAGE sql AS $$
    INSERT INTO iap.appstore_api_limits (family, paused_until, throttled_at)
    VALUES (p_family, clock_timestamp() + make_interval(secs => greatest(p_seconds, 0)), clock_timestamp())
    ON CONFLICT (family) DO UPDATE
    SET paused_until = greatest(iap.appstore_api_limits.paused_until, excluded.paused_until),
        throttled_at = excluded.throttled_at
$$;

-- The support console hardened: an append-only audit trail, sign-in attempts throttled across
-- processes, sessions that end after an idle spell. Every statement is safe to run again and on a
-- live database: new tables and columns only, functions replaced, triggers recreated.

-- The audit trail is append-only: no role may change or remove what happened, and a
-- trigger refuses it even for the table's owner or a superuser, who ignore privileges.
REVOKE UPDATE, DELETE, TRUNCATE ON iap.audit_log FROM PUBLIC;
REVOKE UPDATE, DELETE, TRUNCATE ON iap.audit_log FROM CURRENT_USER;

CREATE OR REPLACE FUNCTION iap.audit_log_is_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'iap.audit_log is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END $$;

DROP TRIGGER IF EXISTS audit_log_append_only ON iap.audit_log;
CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON iap.audit_log
    FOR EACH ROW EXECUTE FUNCTION iap.audit_log_is_append_only();
DROP TRIGGER IF EXISTS audit_log_no_truncate ON iap.audit_log;
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON iap.audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION iap.audit_log_is_append_only();

-- Sign-in attempts per user name and per client address, shared by every console process.
-- An attempt is counted (reserved) before the password is hashed, so parallel guesses cannot
-- all pass the check; past the free attempts each further one waits an exponentially growing,
-- capped delay instead of a hard lockout that an attacker could renew forever.
CREATE TABLE IF NOT EXISTS iap.console_login_attempts (
    key             text PRIMARY KEY,               -- 'user:<name>' or 'address:<client address>'
    failures        integer NOT NULL DEFAULT 0,     -- attempts not yet known to have succeeded
    last_attempt_at timestamptz NOT NULL DEFAULT now(),
    next_attempt_at timestamptz NOT NULL DEFAULT now()
);

-- Reserves one attempt for every key, or none: returns 0 when reserved, else the seconds until
-- the first key allows another. Keys are locked in order, so concurrent calls cannot deadlock.
CREATE OR REPLACE FUNCTION iap.console_login_reserve(
    keys text[], free_attempts integer[], base_delay_seconds double precision, max_delay_seconds double precision,
    forget_after_seconds double precision) RETURNS double precision LANGUAGE plpgsql AS $$
DECLARE
    wait double precision;
BEGIN
    -- Now and then, rows nobody has tried for a long while go (a spray of addresses must not pile up).
    IF random() < 0.01 THEN
        DELETE FROM iap.console_login_attempts
        WHERE last_attempt_at < now() - make_interval(secs => 2 * forget_after_seconds) AND next_attempt_at < now();
    END IF;
    INSERT INTO iap.console_login_attempts (key) SELECT k FROM unnest(keys) AS k ORDER BY k ON CONFLICT (key) DO NOTHING;
    PERFORM 1 FROM iap.console_login_attempts WHERE key = ANY (keys) ORDER BY key FOR UPDATE;
    -- A quiet spell forgives: counts older than the window start again from nothing.
    UPDATE iap.console_login_attempts SET failures = 0
    WHERE key = ANY (keys) AND last_attempt_at < now() - make_interval(secs => forget_after_seconds);
    SELECT max(extract(epoch FROM next_attempt_at - now())) INTO wait FROM iap.console_login_attempts WHERE key = ANY (keys);
    IF wait > 0 THEN
        RETURN wait;
    END IF;
    UPDATE iap.console_login_attempts a SET failures = a.failures + 1, last_attempt_at = now(),
        next_attempt_at = now() + make_interval(secs => CASE WHEN a.failures + 1 < f.free THEN 0
            ELSE least(max_delay_seconds, base_delay_seconds * power(2, a.failures + 1 - f.free)) END)
    FROM unnest(keys, free_attempts) AS f (key, free)
    WHERE a.key = f.key;
    RETURN 0;
END $$;

-- A right password: the user's count starts again, and the address gets its attempt back.
CREATE OR REPLACE FUNCTION iap.console_login_succeeded(user_key text, address_key text) RETURNS void LANGUAGE sql AS $$
    DELETE FROM iap.console_login_attempts WHERE key = user_key;
    UPDATE iap.console_login_attempts SET failures = greatest(failures - 1, 0) WHERE key = address_key;
$$;

-- Sessions end after an idle spell too (CONSOLE_IDLE_SECONDS), not only at their absolute expiry.
ALTER TABLE iap.console_sessions ADD COLUMN IF NOT EXISTS last_seen_at timestamptz NOT NULL DEFAULT now();

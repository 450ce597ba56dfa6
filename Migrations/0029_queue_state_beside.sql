-- The queue's state beside the table (docs/design.md), step 1 of 3: the side tables and the
-- triggers that keep them in step with iap.job_queue. Step 2 (0030) fills them from the jobs
-- already there; step 3 (0031) drops the partial state indexes, so that a claim and a `done`
-- completion change no indexed column and are HOT.
--
--   iap.job_ready      the runnable jobs (queued, retrying) by run_at: what a claim takes (and deletes)
--   iap.job_parked     the timed_out jobs by run_at: what the sweep re-queues
--   iap.job_flagged    attention and failed jobs: the console's lists, the statistics, retention
--   iap.job_leases     one row per claim: its worker, expiry and job ids: the rescuer's way in
--
-- A side row says where to look, the job row says what is true: every reader re-checks the job's
-- state, so a side row left behind (a job moved by hand out of a state the triggers do not watch
-- leaving) is skipped and removed, never acted on.
CREATE TABLE IF NOT EXISTS iap.job_ready (
    id     bigint PRIMARY KEY,
    state  text NOT NULL CHECK (state IN ('queued', 'retrying')),
    run_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS job_ready_due ON iap.job_ready (run_at, id);
-- Every claim deletes from it: vacuumed and analysed after every few thousand changes, or the
-- dead entries at the head of job_ready_due and statistics saying "empty" after a quiet spell
-- make a claim read and sort the whole set.
ALTER TABLE iap.job_ready SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 2000,
                               autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 2000,
                               autovacuum_vacuum_cost_delay = 0);

CREATE TABLE IF NOT EXISTS iap.job_parked (
    id     bigint PRIMARY KEY,
    run_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS job_parked_due ON iap.job_parked (run_at, id);

CREATE TABLE IF NOT EXISTS iap.job_flagged (
    id          bigint PRIMARY KEY,
    state       text NOT NULL CHECK (state IN ('attention', 'failed')),
    finished_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS job_flagged_by_state ON iap.job_flagged (state, id);
CREATE INDEX IF NOT EXISTS job_flagged_failed_by_time ON iap.job_flagged (finished_at) WHERE state = 'failed';

CREATE TABLE IF NOT EXISTS iap.job_leases (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    leased_by  text NOT NULL,
    expires_at timestamptz NOT NULL,
    job_ids    bigint[] NOT NULL
);
ALTER TABLE iap.job_leases ALTER COLUMN job_ids SET STORAGE EXTERNAL; -- 8 KB per claim: not worth compressing
CREATE INDEX IF NOT EXISTS job_leases_by_expiry ON iap.job_leases (expires_at);
CREATE INDEX IF NOT EXISTS job_leases_by_holder ON iap.job_leases (leased_by);
ALTER TABLE iap.job_leases SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 200,
                                autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 200);

-- A job entering a state that has a side table gets its side row (and loses the others'). The
-- claim (to running) and a completion to `done` never fire it: the WHEN is evaluated per row
-- without a function call, so the hot path pays nothing.
CREATE OR REPLACE FUNCTION iap.job_state_entered() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.state IN ('queued', 'retrying') THEN
        INSERT INTO iap.job_ready (id, state, run_at) VALUES (NEW.id, NEW.state, NEW.run_at)
        ON CONFLICT (id) DO UPDATE SET state = EXCLUDED.state, run_at = EXCLUDED.run_at;
    ELSIF NEW.state = 'timed_out' THEN
        INSERT INTO iap.job_parked (id, run_at) VALUES (NEW.id, NEW.run_at)
        ON CONFLICT (id) DO UPDATE SET run_at = EXCLUDED.run_at;
    ELSE
        INSERT INTO iap.job_flagged (id, state, finished_at) VALUES (NEW.id, NEW.state, coalesce(NEW.finished_at, now()))
        ON CONFLICT (id) DO UPDATE SET state = EXCLUDED.state, finished_at = EXCLUDED.finished_at;
    END IF;
    IF NEW.state NOT IN ('queued', 'retrying') THEN DELETE FROM iap.job_ready WHERE id = NEW.id; END IF;
    IF NEW.state <> 'timed_out' THEN DELETE FROM iap.job_parked WHERE id = NEW.id; END IF;
    IF NEW.state NOT IN ('attention', 'failed') THEN DELETE FROM iap.job_flagged WHERE id = NEW.id; END IF;
    RETURN NULL;
END
$$;

-- New jobs by statement, set-based: a bulk load of 100,000 is three INSERT … SELECT, not
-- 100,000 function calls.
CREATE OR REPLACE FUNCTION iap.jobs_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO iap.job_ready (id, state, run_at)
    SELECT id, state, run_at FROM new_rows WHERE state IN ('queued', 'retrying')
    ON CONFLICT (id) DO UPDATE SET state = EXCLUDED.state, run_at = EXCLUDED.run_at;
    INSERT INTO iap.job_parked (id, run_at)
    SELECT id, run_at FROM new_rows WHERE state = 'timed_out'
    ON CONFLICT (id) DO UPDATE SET run_at = EXCLUDED.run_at;
    INSERT INTO iap.job_flagged (id, state, finished_at)
    SELECT id, state, coalesce(finished_at, now()) FROM new_rows WHERE state IN ('attention', 'failed')
    ON CONFLICT (id) DO UPDATE SET state = EXCLUDED.state, finished_at = EXCLUDED.finished_at;
    RETURN NULL;
END
$$;
DROP TRIGGER IF EXISTS jobs_inserted ON iap.job_queue;
CREATE TRIGGER jobs_inserted AFTER INSERT ON iap.job_queue REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION iap.jobs_inserted();
DROP TRIGGER IF EXISTS job_state_entered ON iap.job_queue;
CREATE TRIGGER job_state_entered AFTER UPDATE OF state, run_at ON iap.job_queue FOR EACH ROW
    WHEN (NEW.state IN ('queued', 'retrying', 'timed_out', 'attention', 'failed')
          AND (NEW.state IS DISTINCT FROM OLD.state OR NEW.run_at IS DISTINCT FROM OLD.run_at))
    EXECUTE FUNCTION iap.job_state_entered();

-- A deleted job takes its side rows with it (retention, the view's DELETE, your own).
CREATE OR REPLACE FUNCTION iap.jobs_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM iap.job_ready r USING old_rows o WHERE r.id = o.id;
    DELETE FROM iap.job_parked p USING old_rows o WHERE p.id = o.id;
    DELETE FROM iap.job_flagged f USING old_rows o WHERE f.id = o.id;
    RETURN NULL;
END
$$;
DROP TRIGGER IF EXISTS jobs_deleted ON iap.job_queue;
CREATE TRIGGER jobs_deleted AFTER DELETE ON iap.job_queue REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION iap.jobs_deleted();

-- A job leased through the iap.jobs view (workers built before 0024, your own SQL) gets its
-- lease row there, so the rescuer finds it without reading the table.
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
    END IF;
    RETURN NEW;
END
$$;

CREATE OR REPLACE FUNCTION iap.jobs_view_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE iap.job_queue SET id = NEW.id, kind = NEW.kind, state = NEW.state, outcome = NEW.outcome,
        attempts = NEW.attempts, run_at = NEW.run_at, leased_by = NEW.leased_by,
        lease_expires_at = NEW.lease_expires_at, apple_status = NEW.apple_status, last_error = NEW.last_error,
        transaction_ids = NEW.transaction_ids, sweeps = NEW.sweeps, created_at = NEW.created_at,
        finished_at = NEW.finished_at
    WHERE id = OLD.id;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF NEW.state = 'running' AND (OLD.state IS DISTINCT FROM 'running' OR NEW.lease_expires_at IS DISTINCT FROM OLD.lease_expires_at) THEN
        INSERT INTO iap.job_leases (leased_by, expires_at, job_ids) VALUES (NEW.leased_by, NEW.lease_expires_at, ARRAY[NEW.id]);
    END IF;
    -- A state left by hand leaves no side row behind (the worker's own moves out of a side
    -- table delete the row themselves: the claim, the sweep).
    IF NEW.state IS DISTINCT FROM OLD.state THEN
        IF NEW.state NOT IN ('queued', 'retrying') THEN DELETE FROM iap.job_ready WHERE id = NEW.id; END IF;
        IF NEW.state <> 'timed_out' THEN DELETE FROM iap.job_parked WHERE id = NEW.id; END IF;
        IF NEW.state NOT IN ('attention', 'failed') THEN DELETE FROM iap.job_flagged WHERE id = NEW.id; END IF;
    END IF;
    IF (NEW.id, NEW.kind, NEW.user_id, NEW.order_id, NEW.product_id, NEW.payload, NEW.dedup_key, NEW.created_at)
       IS DISTINCT FROM (OLD.id, OLD.kind, OLD.user_id, OLD.order_id, OLD.product_id, OLD.payload, OLD.dedup_key, OLD.created_at) THEN
        UPDATE iap.job_requests SET id = NEW.id, kind = NEW.kind, user_id = NEW.user_id, order_id = NEW.order_id,
            product_id = NEW.product_id, payload = NEW.payload, dedup_key = NEW.dedup_key, created_at = NEW.created_at
        WHERE id = OLD.id;
    END IF;
    RETURN NEW;
END
$$;

-- The jobs already queued, parked or flagged are filled in by 0030, in batches, outside this
-- transaction: it holds the table's lock (taken by CREATE TRIGGER) only as long as the catalog
-- changes and the lease rows of the running jobs, a set no larger than the fleet's slots.
-- The running jobs' leases, one row per worker and expiry (workers of the previous build write
-- none for their later claims: the rescuer also looks for running jobs without one, slowly).
INSERT INTO iap.job_leases (leased_by, expires_at, job_ids)
SELECT leased_by, lease_expires_at, array_agg(id) FROM iap.job_queue WHERE state = 'running'
GROUP BY leased_by, lease_expires_at;

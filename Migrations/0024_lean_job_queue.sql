-- Splitting iap.jobs, step 3 of 3 (contract), one short transaction: iap.jobs the table becomes
-- iap.job_queue, the lean queue (what claims and completions update), and iap.jobs becomes a view
-- over iap.job_queue and iap.job_requests with every column a job has (dedup_key,
-- transaction_ids and sweeps included), so whatever reads iap.jobs keeps working.
--
-- The lock makes the switch atomic for enqueues and workers: they wait, then find the view. The
-- wait is the catch-up below (two anti-joins of the two primary keys: jobs nothing copied, which
-- only disabled triggers can cause, as session_replication_role = replica does, and requests of
-- jobs deleted since) and the catalog changes after it. Through the view's INSTEAD OF triggers,
-- the SQL of workers not yet rolled (claims, completions, releases through UPDATE iap.jobs) keeps
-- working until they are replaced; the product's own SQL targets the two tables directly.
LOCK TABLE iap.jobs IN ACCESS EXCLUSIVE MODE;

-- Rows the trigger and the backfill both missed (none, unless the trigger was disabled).
INSERT INTO iap.job_requests (id, kind, user_id, order_id, product_id, payload, dedup_key, created_at)
SELECT j.id, j.kind, j.user_id, j.order_id, j.product_id, j.payload, j.dedup_key, j.created_at
FROM iap.jobs j WHERE NOT EXISTS (SELECT 1 FROM iap.job_requests r WHERE r.id = j.id);

-- Requests whose job was deleted after they were copied (retention, or your own DELETE, between
-- 0022 and now): their dedup key would otherwise send a resubmission to a job that is gone.
DELETE FROM iap.job_requests r WHERE NOT EXISTS (SELECT 1 FROM iap.jobs j WHERE j.id = r.id);

DROP TRIGGER jobs_copy_requests ON iap.jobs;
DROP FUNCTION iap.copy_new_job_requests();

-- Keeps the identity sequence (iap.jobs_id_seq), the primary key (jobs_pkey), the partial state
-- indexes, the CHECKs on state/outcome/kind/lease, fillfactor and the autovacuum settings.
ALTER TABLE iap.jobs RENAME TO job_queue;
-- Catalog-only: each row sheds the dropped values at its next update. jobs_dedup, jobs_by_user,
-- jobs_by_order and jobs_user_required go with their columns (job_requests has their twins).
ALTER TABLE iap.job_queue
    DROP COLUMN user_id, DROP COLUMN order_id, DROP COLUMN product_id, DROP COLUMN payload, DROP COLUMN dedup_key;
COMMENT ON TABLE iap.job_queue IS
    'The hot half of a job (issue 25): what claims and completions update. Read iap.jobs, the view, for a whole job.';
COMMENT ON TABLE iap.job_requests IS
    'The cold half of a job (issue 25): written once at enqueue, never updated by claims or completions.';
ALTER TABLE iap.job_requests ADD CONSTRAINT job_requests_kind_check
    CHECK (kind IN ('receipt', 'signed_transaction', 'transaction_id', 'notification', 'consumption'));

-- The request's id, so that a search by id OR user OR order (the console's) is a condition on
-- one table, answered by ORing its indexes' bitmaps.
CREATE VIEW iap.jobs AS
SELECT r.id, q.kind, r.user_id, r.order_id, r.product_id, r.payload, r.dedup_key, q.state, q.outcome, q.attempts,
       q.run_at, q.leased_by, q.lease_expires_at, q.apple_status, q.last_error, q.transaction_ids, q.sweeps,
       q.created_at, q.finished_at
FROM iap.job_queue q JOIN iap.job_requests r ON r.id = q.id;
COMMENT ON VIEW iap.jobs IS
    'One job (SPEC 3): iap.job_queue joined to iap.job_requests. INSERT, UPDATE and DELETE are routed to the two tables.';

-- The table's defaults, so that an INSERT through the view means what it meant before.
ALTER VIEW iap.jobs ALTER COLUMN id SET DEFAULT nextval('iap.jobs_id_seq'::regclass);
ALTER VIEW iap.jobs ALTER COLUMN state SET DEFAULT 'queued';
ALTER VIEW iap.jobs ALTER COLUMN attempts SET DEFAULT 0;
ALTER VIEW iap.jobs ALTER COLUMN run_at SET DEFAULT now();
ALTER VIEW iap.jobs ALTER COLUMN transaction_ids SET DEFAULT '{}';
ALTER VIEW iap.jobs ALTER COLUMN sweeps SET DEFAULT 0;
ALTER VIEW iap.jobs ALTER COLUMN created_at SET DEFAULT now();

-- An INSERT through the view: the request first (its unique dedup_key raises on a repeat, as the
-- table's did; the product enqueues through iap.enqueue_jobs, which skips repeats), then the
-- queue row. A missing dedup_key is computed as iap.enqueue_jobs would.
CREATE FUNCTION iap.jobs_view_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.dedup_key := coalesce(NEW.dedup_key, iap.job_dedup_key(NEW.kind, NEW.user_id, NEW.order_id, NEW.payload));
    INSERT INTO iap.job_requests (id, kind, user_id, order_id, product_id, payload, dedup_key, created_at)
    VALUES (NEW.id, NEW.kind, NEW.user_id, NEW.order_id, NEW.product_id, NEW.payload, NEW.dedup_key, NEW.created_at);
    INSERT INTO iap.job_queue (id, kind, state, outcome, attempts, run_at, leased_by, lease_expires_at, apple_status,
                               last_error, transaction_ids, sweeps, created_at, finished_at)
    VALUES (NEW.id, NEW.kind, NEW.state, NEW.outcome, NEW.attempts, NEW.run_at, NEW.leased_by, NEW.lease_expires_at,
            NEW.apple_status, NEW.last_error, NEW.transaction_ids, NEW.sweeps, NEW.created_at, NEW.finished_at);
    RETURN NEW;
END
$$;

-- An UPDATE through the view: the queue row always (an unchanged column costs nothing extra and
-- keeps the update HOT where the table's would have been), the request only when one of its
-- columns changed (never, for the workers' SQL).
CREATE FUNCTION iap.jobs_view_update() RETURNS trigger LANGUAGE plpgsql AS $$
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
    IF (NEW.id, NEW.kind, NEW.user_id, NEW.order_id, NEW.product_id, NEW.payload, NEW.dedup_key, NEW.created_at)
       IS DISTINCT FROM (OLD.id, OLD.kind, OLD.user_id, OLD.order_id, OLD.product_id, OLD.payload, OLD.dedup_key, OLD.created_at) THEN
        UPDATE iap.job_requests SET id = NEW.id, kind = NEW.kind, user_id = NEW.user_id, order_id = NEW.order_id,
            product_id = NEW.product_id, payload = NEW.payload, dedup_key = NEW.dedup_key, created_at = NEW.created_at
        WHERE id = OLD.id;
    END IF;
    RETURN NEW;
END
$$;

CREATE FUNCTION iap.jobs_view_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM iap.job_queue WHERE id = OLD.id;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    DELETE FROM iap.job_requests WHERE id = OLD.id;
    RETURN OLD;
END
$$;

CREATE TRIGGER jobs_insert INSTEAD OF INSERT ON iap.jobs FOR EACH ROW EXECUTE FUNCTION iap.jobs_view_insert();
CREATE TRIGGER jobs_update INSTEAD OF UPDATE ON iap.jobs FOR EACH ROW EXECUTE FUNCTION iap.jobs_view_update();
CREATE TRIGGER jobs_delete INSTEAD OF DELETE ON iap.jobs FOR EACH ROW EXECUTE FUNCTION iap.jobs_view_delete();

-- Enqueue writes the two tables (same rules as 0005: validation, dedup key, one NOTIFY per
-- statement). The request goes first: its unique dedup_key decides whether a job is new, and
-- only a new one takes an id from the queue's sequence and gets a queue row.
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
        INSERT INTO iap.job_requests (id, kind, user_id, order_id, product_id, payload, dedup_key)
        VALUES (nextval('iap.jobs_id_seq'::regclass), p_kinds[i], p_user_ids[i], p_order_ids[i], p_product_ids[i],
                p_payloads[i], v_key)
        ON CONFLICT (dedup_key) DO NOTHING
        RETURNING id INTO job_id;
        created := job_id IS NOT NULL;
        IF created THEN
            INSERT INTO iap.job_queue (id, kind) VALUES (job_id, p_kinds[i]);
            v_notify := true;
        ELSE
            SELECT id INTO job_id FROM iap.job_requests WHERE dedup_key = v_key;
        END IF;
        RETURN NEXT;
    END LOOP;
    IF v_notify THEN
        PERFORM pg_notify('iap_jobs', '');
    END IF;
END
$$;

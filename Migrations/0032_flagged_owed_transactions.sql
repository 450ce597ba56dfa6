-- migrate: no-transaction
-- A flagged job's side row carries the Apple transactions it was paid and not credited for, so
-- the overview's "credited since" count (attention jobs paid and not credited whose transactions
-- are all in the ledger now) reads the side table and the ledger, and checks the job itself only
-- for the jobs it counts, instead of reading every attention job from iap.job_queue by primary
-- key (0031 dropped the partial index that served it).
--
-- Statement by statement, each its own transaction: a transaction altering iap.job_flagged and
-- then iap.job_queue's trigger would take their locks in the opposite order to the table's writers
-- (a write to iap.job_queue writes the side tables through its triggers) and deadlock with them.
-- The trigger is replaced in one statement (CREATE OR REPLACE), so no change goes unseen; the
-- functions are replaced first and work under the old trigger too.
ALTER TABLE iap.job_flagged ADD COLUMN IF NOT EXISTS owed_transaction_ids text[];

CREATE OR REPLACE FUNCTION iap.job_state_entered() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.state IN ('queued', 'retrying') THEN
        INSERT INTO iap.job_ready (id, state, run_at) VALUES (NEW.id, NEW.state, NEW.run_at)
        ON CONFLICT (id) DO UPDATE SET state = EXCLUDED.state, run_at = EXCLUDED.run_at;
    ELSIF NEW.state = 'timed_out' THEN
        INSERT INTO iap.job_parked (id, run_at) VALUES (NEW.id, NEW.run_at)
        ON CONFLICT (id) DO UPDATE SET run_at = EXCLUDED.run_at;
    ELSE
        INSERT INTO iap.job_flagged (id, state, finished_at, owed_transaction_ids)
        VALUES (NEW.id, NEW.state, coalesce(NEW.finished_at, now()),
                CASE WHEN NEW.outcome = 'paid_not_credited' THEN NEW.transaction_ids END)
        ON CONFLICT (id) DO UPDATE SET state = EXCLUDED.state, finished_at = EXCLUDED.finished_at,
                                       owed_transaction_ids = EXCLUDED.owed_transaction_ids;
    END IF;
    IF NEW.state NOT IN ('queued', 'retrying') THEN DELETE FROM iap.job_ready WHERE id = NEW.id; END IF;
    IF NEW.state <> 'timed_out' THEN DELETE FROM iap.job_parked WHERE id = NEW.id; END IF;
    IF NEW.state NOT IN ('attention', 'failed') THEN DELETE FROM iap.job_flagged WHERE id = NEW.id; END IF;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION iap.jobs_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO iap.job_ready (id, state, run_at)
    SELECT id, state, run_at FROM new_rows WHERE state IN ('queued', 'retrying')
    ON CONFLICT (id) DO UPDATE SET state = EXCLUDED.state, run_at = EXCLUDED.run_at;
    INSERT INTO iap.job_parked (id, run_at)
    SELECT id, run_at FROM new_rows WHERE state = 'timed_out'
    ON CONFLICT (id) DO UPDATE SET run_at = EXCLUDED.run_at;
    INSERT INTO iap.job_flagged (id, state, finished_at, owed_transaction_ids)
    SELECT id, state, coalesce(finished_at, now()), CASE WHEN outcome = 'paid_not_credited' THEN transaction_ids END
    FROM new_rows WHERE state IN ('attention', 'failed')
    ON CONFLICT (id) DO UPDATE SET state = EXCLUDED.state, finished_at = EXCLUDED.finished_at,
                                   owed_transaction_ids = EXCLUDED.owed_transaction_ids;
    RETURN NULL;
END
$$;

-- A flagged job whose outcome or transactions change (by hand, without a state change) keeps
-- its side row in step. Still skipped by a claim and a `done` completion (the state test first).
CREATE OR REPLACE TRIGGER job_state_entered AFTER UPDATE OF state, run_at, outcome, transaction_ids ON iap.job_queue FOR EACH ROW
    WHEN (NEW.state IN ('queued', 'retrying', 'timed_out', 'attention', 'failed')
          AND (NEW.state IS DISTINCT FROM OLD.state OR NEW.run_at IS DISTINCT FROM OLD.run_at
               OR NEW.outcome IS DISTINCT FROM OLD.outcome OR NEW.transaction_ids IS DISTINCT FROM OLD.transaction_ids))
    EXECUTE FUNCTION iap.job_state_entered();

-- The attention jobs already flagged (a few thousand at most: each is an open case for support);
-- a change meanwhile is written by the trigger above.
UPDATE iap.job_flagged f SET owed_transaction_ids = q.transaction_ids
FROM iap.job_queue q
WHERE q.id = f.id AND f.state = 'attention' AND q.outcome = 'paid_not_credited'
  AND f.owed_transaction_ids IS DISTINCT FROM q.transaction_ids;

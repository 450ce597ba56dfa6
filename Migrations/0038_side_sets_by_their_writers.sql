-- migrate: no-transaction
-- The ready, parked and flagged sets are kept by the statements that move jobs, no longer by a
-- row trigger on iap.job_queue. A row trigger costs every updated row a second fetch of its old
-- version, even where its WHEN skips the function, and a claim or a `done` completion never
-- fired it.
--
-- Who keeps the sets now:
--   the worker's statements     the completion, release, hand-back, rescue and sweep write the side
--                               rows of the jobs they move, in the same statement (QueueStore);
--   inserts and deletes         the statement triggers of 0029, unchanged;
--   edits through iap.jobs      the view's UPDATE trigger places the job (iap.place_jobs);
--   anything else               a job moved straight in iap.job_queue is placed by the leader's
--                               stray search (when a process first becomes leader, then every
--                               10 minutes), or at once by `SELECT iap.place_jobs(ARRAY[…])`.
--
-- Statement by statement (each its own transaction), functions first: the view's new trigger
-- function works before and after the row trigger is dropped, so no edit goes unplaced.

-- Puts each of the jobs given in the side set its state names, with the values it has now, and
-- out of the others. Any number of jobs, by hand or by the view's trigger; a job that does not
-- exist is skipped.
CREATE OR REPLACE FUNCTION iap.place_jobs(p_ids bigint[]) RETURNS void LANGUAGE sql AS $$
    DELETE FROM iap.job_ready AS r USING iap.job_queue AS q
    WHERE r.id = ANY(p_ids) AND q.id = r.id AND q.state NOT IN ('queued', 'retrying');
    DELETE FROM iap.job_parked AS p USING iap.job_queue AS q
    WHERE p.id = ANY(p_ids) AND q.id = p.id AND q.state <> 'timed_out';
    DELETE FROM iap.job_flagged AS f USING iap.job_queue AS q
    WHERE f.id = ANY(p_ids) AND q.id = f.id AND q.state NOT IN ('attention', 'failed');
    INSERT INTO iap.job_ready (id, state, run_at)
    SELECT id, state, run_at FROM iap.job_queue WHERE id = ANY(p_ids) AND state IN ('queued', 'retrying')
    ON CONFLICT (id) DO UPDATE SET state = EXCLUDED.state, run_at = EXCLUDED.run_at;
    INSERT INTO iap.job_parked (id, run_at)
    SELECT id, run_at FROM iap.job_queue WHERE id = ANY(p_ids) AND state = 'timed_out'
    ON CONFLICT (id) DO UPDATE SET run_at = EXCLUDED.run_at;
    INSERT INTO iap.job_flagged (id, state, finished_at, owed_transaction_ids)
    SELECT id, state, coalesce(finished_at, now()), CASE WHEN outcome = 'paid_not_credited' THEN transaction_ids END
    FROM iap.job_queue WHERE id = ANY(p_ids) AND state IN ('attention', 'failed')
    ON CONFLICT (id) DO UPDATE SET state = EXCLUDED.state, finished_at = EXCLUDED.finished_at,
                                   owed_transaction_ids = EXCLUDED.owed_transaction_ids;
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
    IF (NEW.id, NEW.state, NEW.run_at, NEW.outcome, NEW.transaction_ids, NEW.finished_at)
       IS DISTINCT FROM (OLD.id, OLD.state, OLD.run_at, OLD.outcome, OLD.transaction_ids, OLD.finished_at) THEN
        PERFORM iap.place_jobs(ARRAY[NEW.id]);
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

DROP TRIGGER IF EXISTS job_state_entered ON iap.job_queue;

DROP FUNCTION IF EXISTS iap.job_state_entered();

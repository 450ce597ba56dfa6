-- A batch of `done` results finds its rows by their row versions (ctid), not by the primary key.
--
-- The claim returns each job's row version as its UPDATE left it (QueueStore.claimSQL). Until the
-- batch completes nothing else writes those rows: the lease keeps other workers off them. So the
-- completion reads each row directly from its heap page (a TID scan) instead of descending the
-- primary key for it, which was most of the UPDATE's cost: about 1.2 µs of server CPU per job
-- less, measured side by side (docs/benchmarks.md).
--
-- A row version is only an address. If the row was written since the claim (its lease expired
-- and the rescuer took it back), the address names a dead version, or, once the page was pruned,
-- another row. So each row found must still be one of the batch's jobs (`ids`, sorted: its
-- position found by binary search) and still leased to this worker, the same conditions as
-- before. A job not found that way leaves the row count short: the function raises RWL01 as
-- for a lost lease, nothing of it is written, and the worker writes the batch with the completion
-- statement, which finds its rows by key and names the jobs it could not write.
--
-- Replaces 0041's function. A worker of the previous build calls the old signature, finds it
-- missing, logs `completion_function_missing` once and writes its batches with the completion
-- statement until it is replaced. The UPDATE is QueueStore.completeUpdateSQL with the
-- parameters named and the rows found by row version: change both together.

DROP FUNCTION iap.complete_done_jobs(bigint[], int[], text[], text[], float8[], int[], text[], jsonb, text, uuid, text[], int[], int[]);

CREATE FUNCTION iap.complete_done_jobs(
    ids bigint[], row_versions tid[], codes int[], states text[], outcomes text[], delays float8[], apple_statuses int[],
    errors text[], transaction_ids jsonb, worker text, witness uuid, finished_outcomes text[], finished_jobs int[],
    finished_retried int[], OUT written bigint, OUT lost bigint[])
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
AS $$
BEGIN
    IF EXISTS (SELECT FROM unnest(states) AS s WHERE s IS DISTINCT FROM 'done') THEN
        RAISE EXCEPTION 'iap.complete_done_jobs writes done results only' USING ERRCODE = '22023';
    END IF;
    UPDATE iap.job_queue AS j SET
        state = states[(CASE WHEN cardinality(states) = 1 THEN 1 ELSE codes[width_bucket(j.id, ids)] END)],
        outcome = outcomes[(CASE WHEN cardinality(states) = 1 THEN 1 ELSE codes[width_bucket(j.id, ids)] END)],
        run_at = now() + make_interval(secs => coalesce(delays[(CASE WHEN cardinality(states) = 1 THEN 1 ELSE codes[width_bucket(j.id, ids)] END)], 0)),
        apple_status = coalesce(apple_statuses[(CASE WHEN cardinality(states) = 1 THEN 1 ELSE codes[width_bucket(j.id, ids)] END)], j.apple_status),
        last_error = errors[(CASE WHEN cardinality(states) = 1 THEN 1 ELSE codes[width_bucket(j.id, ids)] END)],
        transaction_ids = CASE WHEN complete_done_jobs.transaction_ids -> j.id::text IS NULL THEN j.transaction_ids
                               ELSE ARRAY(SELECT jsonb_array_elements_text(complete_done_jobs.transaction_ids -> j.id::text)) END,
        finished_at = now(),
        leased_by = NULL,
        lease_expires_at = NULL
    WHERE j.ctid = ANY(row_versions) AND ids[width_bucket(j.id, ids)] = j.id
      AND j.leased_by = worker AND j.lease_expires_at > now();
    GET DIAGNOSTICS written = ROW_COUNT;
    IF written <> cardinality(ids) THEN
        RAISE EXCEPTION '% of % jobs were not found under their lease', cardinality(ids) - written, cardinality(ids) USING ERRCODE = 'RWL01';
    END IF;
    INSERT INTO iap.job_finishes (state, outcome, jobs, retried)
    SELECT 'done', f.outcome, f.jobs, f.retried FROM unnest(finished_outcomes, finished_jobs, finished_retried) AS f(outcome, jobs, retried);
    INSERT INTO iap.commit_witness (token, lost_ids) VALUES (witness, '{}');
    lost := NULL; -- as the completion statement's reply says "nothing lost"
END
$$;

COMMENT ON FUNCTION iap.complete_done_jobs IS
    'Completes a batch of done results whose leases the worker holds, its rows found by the row versions the claim returned, with its finish counts and commit witness; raises RWL01 (nothing written) if any row was not found under its lease.';

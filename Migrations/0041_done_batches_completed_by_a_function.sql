-- A completion batch whose results all finish `done` (most batches) is written by one function
-- call instead of one statement whose UPDATE returns its rows into a CTE.
--
-- The completion statement (QueueStore.completionSQL) returns every row it writes into `written`,
-- for the finish counts, the commit witness and its one-row reply to read. Kept in a tuplestore
-- and read three times, those rows cost about 0.9 µs of server CPU per job, a twentieth of a
-- job's whole cost. For a batch of `done` results nothing in them is needed unless a lease was
-- lost: the UPDATE's row count says whether it wrote every row, the worker counts the finishes
-- itself, and the witness records that nothing was lost. If a row was not written the function
-- raises RWL01, nothing of it is written, and the worker writes the batch again with the completion statement, which names
-- the jobs it did not write (BatchCompleter).
--
-- It answers as the completion statement does (QueueStore.written): the rows written, and no lost ids.
-- The UPDATE is QueueStore.completeUpdateSQL with the parameters named: change both together.
-- It refuses any state but `done`, whose jobs enter no side set (migration 0038).

CREATE FUNCTION iap.complete_done_jobs(
    ids bigint[], codes int[], states text[], outcomes text[], delays float8[], apple_statuses int[], errors text[],
    transaction_ids jsonb, worker text, witness uuid, finished_outcomes text[], finished_jobs int[], finished_retried int[],
    OUT written bigint, OUT lost bigint[])
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
    WHERE j.id = ANY(ids) AND j.leased_by = worker AND j.lease_expires_at > now();
    GET DIAGNOSTICS written = ROW_COUNT;
    IF written <> cardinality(ids) THEN
        RAISE EXCEPTION 'the lease of % of % jobs was lost', cardinality(ids) - written, cardinality(ids) USING ERRCODE = 'RWL01';
    END IF;
    INSERT INTO iap.job_finishes (state, outcome, jobs, retried)
    SELECT 'done', f.outcome, f.jobs, f.retried FROM unnest(finished_outcomes, finished_jobs, finished_retried) AS f(outcome, jobs, retried);
    INSERT INTO iap.commit_witness (token, lost_ids) VALUES (witness, '{}');
    lost := NULL; -- as the completion statement's reply says "nothing lost"
END
$$;

COMMENT ON FUNCTION iap.complete_done_jobs IS
    'Completes a batch of done results whose leases the worker holds, with its finish counts and commit witness; raises RWL01 (nothing written) if any lease was lost.';

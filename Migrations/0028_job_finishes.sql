-- The log of finished jobs: one row per (state, outcome) of each completion statement, written by
-- that statement in the same transaction. The console's throughput charts read it, one row per
-- completion batch, instead of one index entry and one heap row per job finished in their window.
-- It is also a step towards a completion that writes no index entry (docs/design.md): the charts
-- no longer need jobs_done or jobs_failed.
--
-- Counts are finish events: a job finished, re-queued by hand and finished again counts twice.
-- Workers built before this migration do not write the log: during a rolling deploy the charts
-- miss what they finish.
CREATE TABLE IF NOT EXISTS iap.job_finishes (
    finished_at timestamptz NOT NULL DEFAULT now(),
    state       text NOT NULL CHECK (state IN ('done', 'failed', 'attention')),
    outcome     text,
    jobs        integer NOT NULL CHECK (jobs > 0),
    retried     integer NOT NULL CHECK (retried BETWEEN 0 AND jobs)
);
CREATE INDEX IF NOT EXISTS job_finishes_by_time ON iap.job_finishes (finished_at);
COMMENT ON TABLE iap.job_finishes IS
    'Jobs finished per completion statement and (state, outcome); retried: those that took more than one attempt. Kept two days (job retention task).';

-- The last day's finished jobs, per minute, so that the charts are whole from the start (each
-- branch reads its state's partial index on finished_at).
INSERT INTO iap.job_finishes (finished_at, state, outcome, jobs, retried)
SELECT date_trunc('minute', finished_at), state, outcome, count(*), count(*) FILTER (WHERE attempts > 1)
FROM (
    SELECT finished_at, state, outcome, attempts FROM iap.job_queue WHERE state = 'done' AND finished_at >= now() - interval '1 day'
    UNION ALL
    SELECT finished_at, state, outcome, attempts FROM iap.job_queue WHERE state = 'failed' AND finished_at >= now() - interval '1 day'
    UNION ALL
    SELECT finished_at, state, outcome, attempts FROM iap.job_queue WHERE state = 'attention' AND finished_at >= now() - interval '1 day'
) AS finished
WHERE NOT EXISTS (SELECT 1 FROM iap.job_finishes)
GROUP BY 1, 2, 3;

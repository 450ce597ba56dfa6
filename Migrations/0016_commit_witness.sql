-- An ambiguous COMMIT (its reply lost to a failover, a frozen link or a call past its
-- deadline) is resolved by a witness row that the completion transaction writes with its
-- client-chosen token. On a fresh session the worker inserts the same token itself:
--   * a conflict means the original transaction committed (its row lists the jobs it wrote);
--   * an insert that succeeds is a tombstone (job_ids NULL): the original transaction, if it
--     is still alive anywhere, now fails on the primary key and can never commit.
-- The insert waits on the original while it is still in progress, so the answer is final.
-- Unlike pg_xact_status() on a remembered transaction id, this holds after a failover or a
-- crash: a transaction id whose assignment never reached the WAL is handed out again there.
CREATE TABLE iap.commit_witness (
    token      uuid PRIMARY KEY,
    job_ids    bigint[],
    created_at timestamptz NOT NULL DEFAULT now()
);

-- The cleaner deletes by age; BRIN costs the insert path next to nothing.
CREATE INDEX commit_witness_age ON iap.commit_witness USING brin (created_at);

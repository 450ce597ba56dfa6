-- A job holds a lease exactly while it runs: claim sets state 'running' with leased_by and
-- lease_expires_at; complete, release and rescue clear both as they move it on. Completion
-- relies on it: it finds its jobs by primary key and lease holder alone, a lookup the planner
-- cannot turn into a scan of every running job (see QueueStore.lockOwnedSQL).
ALTER TABLE iap.jobs ADD CONSTRAINT jobs_leased_while_running
    CHECK ((state = 'running') = (leased_by IS NOT NULL AND lease_expires_at IS NOT NULL));

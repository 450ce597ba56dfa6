-- migrate: no-transaction
-- The console's searches, built CONCURRENTLY because iap.jobs, iap.credits and iap.orders may be
-- large and busy: a plain CREATE INDEX would block every enqueue and claim for the length of the
-- build. Each build is preceded by a DROP so that a run interrupted midway (which leaves an
-- INVALID index behind) is repaired by running the migration again.
--
-- jobs_by_user costs one index write per non-HOT job update (0003 dropped an index like it for
-- that reason); "what happened to this buyer" is the console's first question, and the ledger
-- alone cannot answer it for jobs that never credited.
DROP INDEX CONCURRENTLY IF EXISTS iap.jobs_by_user;
CREATE INDEX CONCURRENTLY jobs_by_user ON iap.jobs (user_id, id);
DROP INDEX CONCURRENTLY IF EXISTS iap.jobs_by_order;
CREATE INDEX CONCURRENTLY jobs_by_order ON iap.jobs (order_id, id) WHERE order_id IS NOT NULL;
-- A job's ledger rows, for credits made by a job other than the one whose transaction ids list them.
DROP INDEX CONCURRENTLY IF EXISTS iap.credits_by_job;
CREATE INDEX CONCURRENTLY credits_by_job ON iap.credits (job_id);
-- A buyer's orders, newest first.
DROP INDEX CONCURRENTLY IF EXISTS iap.orders_by_user;
CREATE INDEX CONCURRENTLY orders_by_user ON iap.orders (user_id, created_at);
-- Alerts by transaction (the search), by buyer (the user page), and open first (the alerts page).
DROP INDEX CONCURRENTLY IF EXISTS iap.alerts_by_transaction;
CREATE INDEX CONCURRENTLY alerts_by_transaction ON iap.alerts (transaction_id) WHERE transaction_id IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS iap.alerts_by_user;
CREATE INDEX CONCURRENTLY alerts_by_user ON iap.alerts (user_id, id);
DROP INDEX CONCURRENTLY IF EXISTS iap.alerts_by_state;
CREATE INDEX CONCURRENTLY alerts_by_state ON iap.alerts (state, id);

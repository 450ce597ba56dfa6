-- migrate: no-transaction
-- Reconciliation with Apple's books: a table of compared days, the reconciliation_gap alert
-- kind, and the indexes that read a day's credits, revocations and open orders. Runs statement by
-- statement so the ledger indexes build CONCURRENTLY: iap.credits is large and every credit writes
-- it. Each index is dropped first, so a build interrupted midway (an INVALID index) is repaired by
-- running the migration again.

-- One row per Pacific reporting day and in-app product: Apple's units and returns from the daily
-- sales summary, ours from the ledger, and when they were last compared.
CREATE TABLE IF NOT EXISTS iap.reconciliation_days (
    day           date        NOT NULL,
    product_id    text        NOT NULL,
    apple_units   bigint      NOT NULL,
    apple_returns bigint      NOT NULL,
    credited      bigint      NOT NULL,
    revoked       bigint      NOT NULL,
    checked_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (day, product_id)
);

-- The new alert kind. NOT VALID then VALIDATE: the scan runs without blocking writers.
ALTER TABLE iap.alerts DROP CONSTRAINT IF EXISTS alerts_kind_check;
ALTER TABLE iap.alerts ADD CONSTRAINT alerts_kind_check
    CHECK (kind IN ('paid_not_credited', 'receipt_replay', 'stuck_verification', 'config_error', 'consumption_failed',
                    'reconciliation_gap')) NOT VALID;
ALTER TABLE iap.alerts VALIDATE CONSTRAINT alerts_kind_check;

-- A gap alert belongs to neither a transaction nor a job: at most one open per product and day.
DROP INDEX CONCURRENTLY IF EXISTS iap.alerts_open_reconciliation_gap;
CREATE UNIQUE INDEX CONCURRENTLY alerts_open_reconciliation_gap ON iap.alerts (product_id, (details ->> 'day'))
    WHERE state = 'open' AND kind = 'reconciliation_gap';

-- The day's credits by Apple purchase date, and its revocations, read from the index alone.
DROP INDEX CONCURRENTLY IF EXISTS iap.credits_by_purchase;
CREATE INDEX CONCURRENTLY credits_by_purchase ON iap.credits (purchased_at) INCLUDE (product_id, quantity, environment);
DROP INDEX CONCURRENTLY IF EXISTS iap.credits_by_revocation;
CREATE INDEX CONCURRENTLY credits_by_revocation ON iap.credits (revoked_at) INCLUDE (product_id, quantity, environment)
    WHERE revoked_at IS NOT NULL;

-- The buyers behind a gap: orders for the product, placed that day, still open.
DROP INDEX CONCURRENTLY IF EXISTS iap.orders_open_by_product_day;
CREATE INDEX CONCURRENTLY orders_open_by_product_day ON iap.orders (product_id, created_at) WHERE status = 'open';

-- Get Transaction History (v2), for the buyers behind a gap, has its own fleet limit row.
INSERT INTO iap.appstore_api_limits (family) VALUES ('transaction_history') ON CONFLICT (family) DO NOTHING;

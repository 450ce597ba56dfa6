-- migrate: no-transaction
-- Reconciliation's outcome per day, for the console's Reconciliation page. Statement by statement
-- so the alerts index builds CONCURRENTLY.

-- The last run's outcome of each Pacific reporting day: clean, gap, or not_available (Apple has not
-- published it yet). no_sales: Apple had no report past its publication time, a day with no sales.
CREATE TABLE IF NOT EXISTS iap.reconciliation_checks (
    day        date        PRIMARY KEY,
    status     text        NOT NULL CHECK (status IN ('clean', 'gap', 'not_available')),
    no_sales   boolean     NOT NULL DEFAULT false,
    checked_at timestamptz NOT NULL DEFAULT now()
);

-- Days reconciled before this migration have product rows: their outcome is read from them (and from the
-- open gap alerts), so the page lists them too.
INSERT INTO iap.reconciliation_checks (day, status, checked_at)
SELECT d.day,
       CASE WHEN bool_and(d.apple_units = d.credited AND d.apple_returns = d.revoked) THEN 'clean' ELSE 'gap' END,
       max(d.checked_at)
FROM iap.reconciliation_days d
GROUP BY d.day
ON CONFLICT (day) DO NOTHING;

-- The gap alerts a day raised, open or resolved, for the page's links.
DROP INDEX CONCURRENTLY IF EXISTS iap.alerts_reconciliation_gap_by_day;
CREATE INDEX CONCURRENTLY alerts_reconciliation_gap_by_day ON iap.alerts ((details ->> 'day'), product_id, id)
    WHERE kind = 'reconciliation_gap';

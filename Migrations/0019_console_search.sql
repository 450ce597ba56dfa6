-- migrate: no-transaction
-- The console's one "find" box looks a text up as an order id or a transaction id in the ledger,
-- the orders and the alerts, and finds a buyer's jobs through the ledger rows and alerts that name
-- them (a buyer credited by a notification, a late order match or a lookup has no job with their
-- user or order). Built CONCURRENTLY, each after a DROP, as in 0014: iap.credits and iap.orders
-- may be large and busy, and a run interrupted midway is repaired by running the migration again.
DROP INDEX CONCURRENTLY IF EXISTS iap.credits_by_order;
CREATE INDEX CONCURRENTLY credits_by_order ON iap.credits (order_id) WHERE order_id IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS iap.orders_by_transaction;
CREATE INDEX CONCURRENTLY orders_by_transaction ON iap.orders (transaction_id) WHERE transaction_id IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS iap.alerts_by_order;
CREATE INDEX CONCURRENTLY alerts_by_order ON iap.alerts (order_id) WHERE order_id IS NOT NULL;

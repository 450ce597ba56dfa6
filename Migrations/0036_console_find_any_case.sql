-- migrate: no-transaction
-- The console's find box matches a user id whatever its case ("Frank" finds frank) when the text
-- as typed names nothing: through the orders (every buyer who placed one) and the alerts, by
-- lower(user_id). Not on iap.credits or the jobs: the worker writes those on its hot path. Built
-- CONCURRENTLY, each after a DROP, as in 0019: iap.orders may be large and busy, and a run
-- interrupted midway is repaired by running the migration again.
DROP INDEX CONCURRENTLY IF EXISTS iap.orders_by_user_any_case;
CREATE INDEX CONCURRENTLY orders_by_user_any_case ON iap.orders (lower(user_id));
DROP INDEX CONCURRENTLY IF EXISTS iap.alerts_by_user_any_case;
CREATE INDEX CONCURRENTLY alerts_by_user_any_case ON iap.alerts (lower(user_id)) WHERE user_id IS NOT NULL;

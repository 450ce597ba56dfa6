-- migrate: no-transaction
-- credits_by_order (0019, the console's search by order) repeats credits_one_per_order: the
-- ledger's order_id is NOT NULL and unique (0001), so both index every row by the same key, and
-- every credit writes a second index entry for nothing. Lookups by order (the console, support's
-- re-credit) use the unique index. Dropped CONCURRENTLY: the ledger may be large and busy; running
-- it again is harmless.
DROP INDEX CONCURRENTLY IF EXISTS iap.credits_by_order;

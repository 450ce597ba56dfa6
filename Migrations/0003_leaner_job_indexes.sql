-- Every non-HOT update of a job writes a new entry into every index whose predicate the
-- row satisfies; a job is updated at least twice (claim, complete). These two indexes
-- cost a write per update and serve only occasional reads (stuck detection once a
-- minute, ad-hoc lookups by user), which the state indexes and the ledger serve well
-- enough, so the hot path loses them.
DROP INDEX IF EXISTS iap.jobs_unfinished_created;
DROP INDEX IF EXISTS iap.jobs_by_user;

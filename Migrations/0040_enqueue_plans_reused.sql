-- The enqueue function's statements keep one plan per session.
--
-- Direct sessions plan every statement for each run (`plan_cache_mode = force_custom_plan`; see
-- PostgresConfiguration), and that reaches the statements inside a PL/pgSQL function too: every
-- call of iap.enqueue_jobs planned its five statements again, a quarter of the server's CPU for a
-- batch of fifteen receipts. The function now runs them with reused plans, made with sequential
-- scans priced out, as the claim and completion transactions do: a plan first made while the
-- tables were empty still looks a duplicate up by its dedup key's index once they are large.
-- The settings hold for the function's own statements only and are restored when it returns.

ALTER FUNCTION iap.enqueue_jobs(text[], text[], text[], text[], text[])
    SET plan_cache_mode = force_generic_plan
    SET enable_seqscan = off;

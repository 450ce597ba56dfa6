-- The dedup key's function says what its body is: STABLE (convert_to and the integer-to-text
-- concatenations are STABLE), not IMMUTABLE. A SQL function declared IMMUTABLE over a STABLE
-- body is never inlined, so every enqueued row ran it as a query of its own: parsed and planned
-- once per statement, an executor started and stopped per row. Declared STABLE, PostgreSQL
-- inlines it into the calling statement as a plain expression. The key is the same; nothing
-- indexes the function (the unique index is on the stored column).
ALTER FUNCTION iap.job_dedup_key(text, text, text, text) STABLE;

-- A statement that must write exactly N rows checks it itself. The completion transaction
-- sends its writes and COMMIT in one round trip (pipeline mode), so the client can no longer
-- look at a count and roll back before COMMIT: the statement fails instead, and the server
-- skips everything after it, COMMIT included.
CREATE FUNCTION iap.expect_rows(what text, expected bigint, VARIADIC written bigint[]) RETURNS bigint
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM unnest(written) AS w WHERE w IS DISTINCT FROM expected) THEN
        RAISE EXCEPTION '% wrote % rows where % were expected', what, array_to_string(written, ' and '), expected;
    END IF;
    RETURN expected;
END
$$;

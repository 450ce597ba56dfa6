-- A leader's duty carries its term into its statements: each runs behind a call of this function
-- in the same implicit transaction, so a statement that reaches the server after the term ended
-- (queued behind other work, or on a stalled session) changes nothing. The term is the lease's
-- holder and the moment it was elected; the check reads the clock, not the transaction's start.
CREATE FUNCTION iap.leader_term_holds(p_name text, p_leader_id text, p_elected_at timestamptz)
RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM iap.leader
                   WHERE name = p_name AND leader_id = p_leader_id AND elected_at = p_elected_at
                     AND expires_at > clock_timestamp()) THEN
        RAISE EXCEPTION 'the leadership term of % ended', p_leader_id USING ERRCODE = 'RWL01';
    END IF;
    RETURN true;
END
$$;

-- The job tables' enumerations (kind, state, outcome) are checked by domains, not by CHECK
-- constraints of the tables.
--
-- PostgreSQL reads a table's CHECK constraints back from their stored form for every statement
-- that writes the table (each one, before its first row), and these lists of values are long in
-- that form: for the enqueue of one receipt, 15 % of the server's CPU went to reading them back.
-- A domain's constraints are read once per session and kept; a row still gets its value checked.
-- The rules are the same ones, with the same SQLSTATE (23514) for a value outside them.
--
-- The view iap.jobs names these columns, so it is made again as it was, with its defaults,
-- comment, triggers and whatever privileges were granted on it. A view of someone else's on
-- iap.jobs stops the migration (no CASCADE) rather than disappear.

CREATE DOMAIN iap.job_kind AS text;
CREATE DOMAIN iap.job_state AS text;
CREATE DOMAIN iap.job_outcome AS text;

CREATE TEMPORARY TABLE jobs_view_grants ON COMMIT DROP AS
SELECT a.grantee, a.privilege_type, a.is_grantable
FROM pg_class AS c, aclexplode(c.relacl) AS a
WHERE c.oid = 'iap.jobs'::regclass AND a.grantee <> c.relowner;

DROP VIEW iap.jobs;

-- A domain with no constraint yet: the columns change type without a rewrite of the tables.
ALTER TABLE iap.job_requests
    DROP CONSTRAINT job_requests_kind_check,
    ALTER COLUMN kind TYPE iap.job_kind;
ALTER TABLE iap.job_queue
    DROP CONSTRAINT jobs_kind_check,
    DROP CONSTRAINT jobs_state_check,
    DROP CONSTRAINT jobs_outcome_check,
    ALTER COLUMN kind TYPE iap.job_kind,
    ALTER COLUMN state TYPE iap.job_state,
    ALTER COLUMN outcome TYPE iap.job_outcome;

ALTER DOMAIN iap.job_kind ADD CONSTRAINT job_kind_known
    CHECK (VALUE IN ('receipt', 'signed_transaction', 'transaction_id', 'notification', 'consumption'));
ALTER DOMAIN iap.job_state ADD CONSTRAINT job_state_known
    CHECK (VALUE IN ('queued', 'running', 'retrying', 'timed_out', 'done', 'failed', 'attention'));
ALTER DOMAIN iap.job_outcome ADD CONSTRAINT job_outcome_known
    CHECK (VALUE IN ('credited', 'already_credited', 'revoked', 'restored', 'acknowledged', 'consumption_sent',
                     'invalid_receipt', 'wrong_bundle', 'invalid_signature', 'wrong_environment', 'sandbox_rejected',
                     'replayed', 'refunded', 'no_purchase', 'paid_not_credited', 'config_error', 'consumption_failed'));

CREATE VIEW iap.jobs AS
SELECT r.id, q.kind, r.user_id, r.order_id, r.product_id, r.payload, r.dedup_key, q.state, q.outcome, q.attempts,
       q.run_at, q.leased_by, q.lease_expires_at, q.apple_status, q.last_error, q.transaction_ids, q.sweeps,
       q.created_at, q.finished_at
FROM iap.job_queue q JOIN iap.job_requests r ON r.id = q.id;
COMMENT ON VIEW iap.jobs IS
    'One job (SPEC 3): iap.job_queue joined to iap.job_requests. INSERT, UPDATE and DELETE are routed to the two tables.';

ALTER VIEW iap.jobs ALTER COLUMN id SET DEFAULT nextval('iap.jobs_id_seq'::regclass);
ALTER VIEW iap.jobs ALTER COLUMN state SET DEFAULT 'queued';
ALTER VIEW iap.jobs ALTER COLUMN attempts SET DEFAULT 0;
ALTER VIEW iap.jobs ALTER COLUMN run_at SET DEFAULT now();
ALTER VIEW iap.jobs ALTER COLUMN transaction_ids SET DEFAULT '{}';
ALTER VIEW iap.jobs ALTER COLUMN sweeps SET DEFAULT 0;
ALTER VIEW iap.jobs ALTER COLUMN created_at SET DEFAULT now();

CREATE TRIGGER jobs_insert INSTEAD OF INSERT ON iap.jobs FOR EACH ROW EXECUTE FUNCTION iap.jobs_view_insert();
CREATE TRIGGER jobs_update INSTEAD OF UPDATE ON iap.jobs FOR EACH ROW EXECUTE FUNCTION iap.jobs_view_update();
CREATE TRIGGER jobs_delete INSTEAD OF DELETE ON iap.jobs FOR EACH ROW EXECUTE FUNCTION iap.jobs_view_delete();

DO $$
DECLARE
    g record;
BEGIN
    FOR g IN SELECT * FROM jobs_view_grants LOOP
        EXECUTE format('GRANT %s ON iap.jobs TO %s%s', g.privilege_type,
                       CASE WHEN g.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(g.grantee)) END,
                       CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
    END LOOP;
END
$$;

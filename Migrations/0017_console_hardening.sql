-- Issue 23 (ASVS read of the support console). Every statement is safe to run again and on a
-- live database: new tables and columns only, functions replaced, triggers recreated.

-- The audit trail is append-only (SPEC 10): no role may change or remove what happened, and a
-- trigger refuses it even for the table's owner or a superuser, who ignore privileges.
REVOKE UPDATE, DELETE, TRUNCATE ON iap.audit_log FROM PUBLIC;
REVOKE UPDATE, DELETE, TRUNCATE ON iap.audit_log FROM CURRENT_USER;

CREATE OR REPLACE FUNCTION iap.audit_log_is_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'iap.audit_log is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END $$;

DROP TRIGGER IF EXISTS audit_log_append_only ON iap.audit_log;
CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON iap.audit_log
    FOR EACH ROW EXECUTE FUNCTION iap.audit_log_is_append_only();
DROP TRIGGER IF EXISTS audit_log_no_truncate ON iap.audit_log;
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON iap.audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION iap.audit_log_is_append_only();

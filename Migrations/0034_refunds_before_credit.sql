-- A REFUND can reach the worker before the credit it takes back exists: after an asynchronous
-- failover lost the credit and before the receipt is credited again, or while the receipt's own
-- job is between Apple's answer and its COMMIT. Such a refund is kept here, and the leader's
-- `refund_applier` duty revokes the credit once it lands (then sets `applied_at`). A
-- REFUND_REVERSED that arrives first deletes the row. Rows stay after they are applied, so
-- support can see that a refund came before its credit.
CREATE TABLE iap.refunds_before_credit (
    transaction_id    text        PRIMARY KEY,
    revoked_at        timestamptz NULL,
    revocation_reason text        NOT NULL,
    job_id            bigint      NULL,
    received_at       timestamptz NOT NULL DEFAULT now(),
    applied_at        timestamptz NULL
);

-- The duty reads only the refunds still waiting.
CREATE INDEX refunds_before_credit_waiting ON iap.refunds_before_credit (transaction_id) WHERE applied_at IS NULL;

-- Refund requests: a CONSUMPTION_REQUEST notification records the request here and schedules a
-- `consumption` job, which answers Apple with Send Consumption Information (v2) inside the 12
-- hours Apple allows.
ALTER TABLE iap.jobs DROP CONSTRAINT jobs_kind_check;
ALTER TABLE iap.jobs ADD CONSTRAINT jobs_kind_check
    CHECK (kind IN ('receipt', 'signed_transaction', 'transaction_id', 'notification', 'consumption'));
ALTER TABLE iap.jobs DROP CONSTRAINT jobs_outcome_check;
ALTER TABLE iap.jobs ADD CONSTRAINT jobs_outcome_check CHECK (outcome IN (
    'credited', 'already_credited', 'revoked', 'restored', 'acknowledged', 'consumption_sent',
    'invalid_receipt', 'wrong_bundle', 'invalid_signature', 'wrong_environment',
    'sandbox_rejected', 'replayed', 'refunded', 'no_purchase',
    'paid_not_credited', 'config_error', 'consumption_failed'));
-- Apple, not a user, starts both notifications and refund requests.
ALTER TABLE iap.jobs DROP CONSTRAINT jobs_user_required;
ALTER TABLE iap.jobs ADD CONSTRAINT jobs_user_required CHECK (kind IN ('notification', 'consumption') OR user_id IS NOT NULL);
ALTER TABLE iap.alerts DROP CONSTRAINT alerts_kind_check;
ALTER TABLE iap.alerts ADD CONSTRAINT alerts_kind_check
    CHECK (kind IN ('paid_not_credited', 'receipt_replay', 'stuck_verification', 'config_error', 'consumption_failed'));

CREATE TABLE iap.consumption_requests (
    notification_uuid      uuid PRIMARY KEY,     -- the CONSUMPTION_REQUEST notification
    transaction_id         text NOT NULL,
    environment            text NOT NULL CHECK (environment IN ('Production', 'Sandbox')),
    reason                 text NULL,            -- Apple's consumptionRequestReason
    requested_at           timestamptz NOT NULL,
    respond_by             timestamptz NOT NULL, -- requested_at + 12 hours
    job_id                 bigint NULL,
    state                  text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sent', 'no_consent', 'failed')),
    delivery_status        text NULL,            -- what was sent (Apple's spelling)
    consumption_percentage int NULL,
    refund_preference      text NULL,
    answered_at            timestamptz NULL,
    detail                 text NULL
);
CREATE INDEX consumption_requests_by_transaction ON iap.consumption_requests (transaction_id);

-- What only the game knows, asked for each refund request. Replace it with CREATE OR REPLACE
-- FUNCTION (same signature) to answer from your own tables: one row, or none for "no consent".
-- consumption_percentage is in Apple's milliunits (0..100000 = 0..100 %) and is sent as given.
-- This default answers "no consent", so nothing is ever sent to Apple until you replace it.
CREATE FUNCTION iap.consumption_info(user_id text, transaction_id text)
RETURNS TABLE (customer_consented boolean, consumption_percentage integer, sample_content_provided boolean)
LANGUAGE sql STABLE AS $$
    SELECT false, NULL::integer, false
$$;

-- App Store Server Notifications already applied, by notificationUUID: Apple re-sends a
-- notification (sometimes re-signed, so a different payload) until it gets a 200, and
-- each must change the ledger at most once.
CREATE TABLE iap.notifications (
    notification_uuid uuid PRIMARY KEY,
    notification_type text NOT NULL,
    subtype           text NULL,
    transaction_id    text NULL,
    job_id            bigint NOT NULL,
    applied_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX notifications_by_transaction ON iap.notifications (transaction_id);

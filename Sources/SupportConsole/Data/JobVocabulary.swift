/// The job states, outcomes and kinds `iap.jobs` allows, for filters: a value outside these is a 400.
enum JobVocabulary {
    static let states = ["queued", "running", "retrying", "timed_out", "done", "failed", "attention"]
    static let outcomes = ["credited", "already_credited", "revoked", "restored", "acknowledged", "consumption_sent",
                           "invalid_receipt", "wrong_bundle", "invalid_signature", "wrong_environment", "sandbox_rejected",
                           "replayed", "refunded", "no_purchase", "paid_not_credited", "config_error", "consumption_failed"]
    static let kinds = ["receipt", "signed_transaction", "transaction_id", "notification", "consumption"]
}

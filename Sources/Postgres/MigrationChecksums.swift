/// Whole-file checksums that databases recorded for migrations whose comments have been edited
/// since (`Migration.wholeFileChecksum` of the file as they applied it), by version: such a
/// database recorded the file's statements unchanged, and `Migrator` accepts the row as the file's.
enum MigrationChecksums {
    static let wholeFileBeforeCommentEdits: [Int: (name: String, checksum: String)] = [
        8: ("leader_lease", "348504f678f3b7d2"),
        9: ("appstore_api_limits", "c08fe14e359ad103"),
        10: ("notification_history", "2cc86f2fb04cd0fd"),
        11: ("consumption", "d2d57a0e51c5fb0e"),
        12: ("enqueue_transaction_id", "2a69c84f7146fb4b"),
        13: ("support_console", "2d9ae841773a466e"),
        14: ("console_indexes", "7fb911649ef6ac02"),
        17: ("console_hardening", "9e276b26b723b20b"),
        18: ("reconciliation", "378eb6ff60e8a117"),
        19: ("console_search", "14049aa3a4ba334c"),
        20: ("console_story", "da4dddf4eb131c09"),
        21: ("reconciliation_checks", "a0ee1112073a7685"),
        22: ("job_requests", "390e9bfcc65b00a0"),
        23: ("job_requests_backfill", "1f8a7a5be29fc79a"),
        24: ("lean_job_queue", "57c97656e7d4e449"),
        25: ("attention_by_id", "716ad6dd85bd2914"),
        26: ("credits_by_order_redundant", "9f9cd60e41ca1b13"),
        27: ("commit_witness_lost_ids", "f3bc2ce91e131b1"),
        28: ("job_finishes", "89e0ca42f3d43dd5"),
        29: ("queue_state_beside", "2ad1ed32850d9b8"),
        30: ("queue_state_filled", "10674e864ae397a8"),
        31: ("queue_indexes_beside", "4f1ab309a5616700"),
        32: ("flagged_owed_transactions", "65320eeef4410bda"),
    ]
}

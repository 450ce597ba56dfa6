/// When a paid_not_credited job stops being open work: each of its transactions is in the ledger
/// (credited since), or its paid_not_credited alert was closed with none open (support decided
/// the buyer is owed nothing, e.g. Apple refunded it). The job itself keeps its state: the queue's
/// words do not change, the console reads what happened since.
enum OwedPayments {
    /// True when every transaction in the text[] `column` is in the ledger.
    static func allCredited(_ column: String) -> String {
        """
        NOT EXISTS (SELECT 1 FROM unnest(\(column)) AS owed(transaction_id)
            WHERE NOT EXISTS (SELECT 1 FROM iap.credits WHERE credits.transaction_id = owed.transaction_id))
        """
    }

    /// True when every transaction in `column` is in the ledger or its alert was closed unpaid;
    /// each looked up by the ledger's primary key and alerts_by_transaction.
    static func allSettled(_ column: String) -> String {
        """
        NOT EXISTS (SELECT 1 FROM unnest(\(column)) AS owed(transaction_id)
            WHERE NOT EXISTS (SELECT 1 FROM iap.credits WHERE credits.transaction_id = owed.transaction_id)
              AND (NOT EXISTS (SELECT 1 FROM iap.alerts WHERE alerts.transaction_id = owed.transaction_id
                                   AND alerts.kind = 'paid_not_credited' AND alerts.state = 'resolved')
                   OR EXISTS (SELECT 1 FROM iap.alerts WHERE alerts.transaction_id = owed.transaction_id
                                  AND alerts.kind = 'paid_not_credited' AND alerts.state = 'open')))
        """
    }
}

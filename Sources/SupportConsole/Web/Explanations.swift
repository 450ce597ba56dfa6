/// What each state, outcome, alert kind, alert reason and Apple status means, and what support
/// does about it: shown beside the words. The alert texts follow the alert runbook in
/// docs/operations.md.
enum Explanations {
    static let states: [String: String] = [
        "queued": "Waiting for a worker; it runs within seconds unless the queue is long (see the overview's oldest queued age).",
        "running": "A worker is asking Apple now.",
        "retrying": "Apple answered with a temporary error; the job runs again at its next run time. Nothing to do yet.",
        "timed_out": "Apple could not be reached after the quick retries; the sweep tries again later. Nothing to do unless it lasts hours.",
        "done": "Finished; see the outcome.",
        "failed": "Finished: Apple or our checks rejected the purchase for good; see the outcome. Retrying will not change it.",
        "attention": "Finished, but a person must act: see the outcome and the job's alert.",
        "resolved": "It needed a person, and it is settled now (the payment is in the ledger, or support closed it as owed nothing).",
    ]

    static let outcomes: [String: String] = [
        "credited": "The purchase was added to the buyer's order (one ledger row per Apple transaction).",
        "already_credited": "The ledger already had this payment (an app retry or a notification got there first); nothing was doubled.",
        "revoked": "Apple refunded or revoked the purchase; the ledger row is marked refunded.",
        "restored": "Apple reversed an earlier refund; the ledger row counts again.",
        "acknowledged": "A notification with nothing to change, or one already applied.",
        "consumption_sent": "Apple asked about a refund request and was sent the consumption information.",
        "invalid_receipt": "Apple says the receipt is not valid (damaged or made up). Ask the buyer to restore purchases in the app.",
        "wrong_bundle": "The receipt belongs to another app. Usually a misbehaving client; nothing to credit.",
        "invalid_signature": "The signed transaction did not verify against Apple's certificates; nothing to credit.",
        "wrong_environment": "A sandbox purchase sent to production (or the reverse); test purchases are not credited.",
        "sandbox_rejected": "A sandbox receipt in production, refused by configuration; nothing to credit.",
        "replayed": "This receipt was already credited to another user; see the receipt_replay alert.",
        "refunded": "Apple had already refunded this purchase when it was checked; nothing to credit.",
        "no_purchase": "The receipt is valid but holds no purchase to credit.",
        "paid_not_credited": "Apple says the buyer paid, but no order could take the payment: credit it to the right order from the alert.",
        "config_error": "Apple refused our own configuration (e.g. status 21004, a wrong shared secret). An operator must fix the settings.",
        "consumption_failed": "A refund request's consumption information could not be sent; see the alert.",
        "credited since": "Every transaction of this job was credited after it ended (from the console, the CLI or a later job).",
        "owed nothing": "Support closed this payment's alert without crediting it (the buyer is owed nothing, e.g. Apple refunded it); "
            + "the alert's note says who and why.",
    ]

    static let alertKinds: [String: String] = [
        "paid_not_credited": "Apple says the buyer paid; no order could take the payment. Find the buyer's order and credit the payment to it "
            + "(support role, or the command receipt-worker alerts credit: the same ledger write, never twice); that resolves the alert.",
        "receipt_replay": "A receipt already credited to one user was sent by another. Nothing was credited; look into the account, then resolve with a note.",
        "config_error": "Apple answered 21004 or refused our credentials: an operator fixes the setting (e.g. APPLE_SHARED_SECRET) and re-queues the jobs.",
        "consumption_failed": "Apple asked about a refund request and the answer could not be sent in its 12-hour window (or Apple refused it). "
            + "Unanswered, the refund is usually granted. Fix the cause, then resolve with a note.",
        "stuck_verification": "A job is unfinished long after it arrived (Apple down for a long time, or a kind this build cannot verify). "
            + "Look at its last error; the sweeps keep retrying it.",
        "reconciliation_gap": "Apple's daily sales report and our ledger disagree for a product and Pacific day (units or returns; see the "
            + "Reconciliation page). Apple sold more: the buyers that could be named had their histories pulled and missing purchases "
            + "queued; if buyers_found is 0, find them from the day's support tickets. We credited more, or returns differ: check those "
            + "credits. It resolves itself when a later run matches.",
    ]

    static let reasons: [String: String] = [
        "no_open_order": "The buyer had no open order for this product when the payment arrived (created late, or already used).",
        "no_matching_order": "No open order of this buyer matched the product.",
        "order_of_another_user": "The order named with the purchase belongs to another user.",
        "order_of_another_product": "The order named with the purchase is for another product.",
        "buyer_unknown": "A notification or lookup named no buyer we know (no order carries its appAccountToken); find the buyer by the transaction.",
        "credited_to_another_user": "The transaction is in the ledger for another user.",
        "window_closing": "Apple's 12-hour window for the answer is closing and it could not be sent.",
    ]

    /// Apple's numeric answers: verifyReceipt statuses and the App Store Server API's HTTP codes.
    static func appleStatus(_ status: Int) -> String {
        switch status {
        case 0: "0: Apple's verifyReceipt accepted the receipt as valid."
        case 200: "200: the App Store Server API answered normally."
        case 21002: "21002: the receipt data was malformed."
        case 21003: "21003: the receipt could not be authenticated."
        case 21004: "21004: our shared secret is wrong (APPLE_SHARED_SECRET): an operator must fix it."
        case 21005: "21005: Apple's receipt server was unavailable; retried."
        case 21006: "21006: the subscription in this receipt has expired."
        case 21007: "21007: a sandbox receipt was sent to production (retried against the sandbox when allowed)."
        case 21008: "21008: a production receipt was sent to the sandbox."
        case 21010: "21010: the account was not found or was deleted."
        case 21100...21199: "\(status): an internal error at Apple; retried."
        case 401, 403: "\(status): Apple refused our App Store Server API credentials; an operator must fix APPSTORE_* settings."
        case 404: "404: Apple does not know this transaction or order."
        case 429: "429: Apple's rate limit; retried later."
        case 500...599: "\(status): Apple's server failed; retried."
        default: "\(status): Apple's answer code (see the job's last error)."
        }
    }

    /// An alert kind: what to do with it (the same words as an outcome mean something else).
    static func alertKind(_ kind: String) -> String? { alertKinds[kind] ?? word(kind) }

    /// A reason or error word, including the patterns with a number in them.
    static func word(_ word: String) -> String? {
        if let known = reasons[word] ?? outcomes[word] ?? states[word] ?? alertKinds[word] { return known }
        if word.hasPrefix("apple_status_"), let status = Int(word.dropFirst("apple_status_".count)) { return "Apple status " + appleStatus(status) }
        if word.hasPrefix("unfinished_") { return "The job is still \(word.dropFirst("unfinished_".count)) long after it arrived." }
        if word.hasPrefix("api_") { return "The App Store Server API refused the request with error \(word.dropFirst(4)) (see the alert's details)." }
        return nil
    }

    /// A job's last error, word by word: "1000005:paid_not_credited" is transaction 1000005 ending paid_not_credited.
    static func lastError(_ text: String) -> [String] {
        var seen: Set<String> = []
        return text.split(whereSeparator: { $0 == " " || $0 == "," || $0 == ";" }).compactMap { part -> String? in
            let pieces = part.split(separator: ":", maxSplits: 1).map(String.init)
            let (subject, word) = pieces.count == 2 && pieces[0].allSatisfy(\.isNumber) ? ("Transaction \(pieces[0]): ", pieces[1]) : ("", String(part))
            guard let meaning = Self.word(word), seen.insert(subject + word).inserted else { return nil }
            return "\(subject)\(word) — \(meaning)"
        }
    }
}

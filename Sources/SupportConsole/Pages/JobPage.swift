/// One job: attempts, Apple status, last error, the ledger rows and alerts it touched. The
/// payload (receipt or JWS) is never read from the database, so it cannot be shown.
struct JobPage {
    let detail: JobDetail

    func render(_ user: ConsoleUser) -> HTML {
        let job = detail.job
        let transactions = HTML.join(detail.transactionIDs.map(Components.searchLink), separator: ", ")
        let facts: HTML = """
            <section class="card"><dl class="facts">
            <dt>kind</dt><dd>\(job.kind)</dd>
            <dt>state</dt><dd>\(Components.jobStatus(job).state) \(Components.jobStatus(job).outcome)\(creditedSinceNote)\(meaning)</dd>
            <dt>user</dt><dd>\(Components.userLink(job.userID))</dd>
            <dt>order</dt><dd>\(Components.searchLink(job.orderID))</dd>
            <dt>product</dt><dd>\(job.productID)</dd>
            <dt>Apple transactions</dt><dd>\(detail.transactionIDs.isEmpty ? "–" : transactions)</dd>
            <dt>attempts</dt><dd>\(job.attempts) (re-queued by the sweep \(detail.sweeps) times)</dd>
            <dt>Apple status</dt><dd>\(job.appleStatus.map { "Apple status " + Explanations.appleStatus($0) })</dd>
            <dt>last error</dt><dd><span class="error-text">\(job.lastError)</span>\(errorMeaning)</dd>
            <dt>created</dt><dd>\(DisplayFormat.time(job.createdAt))</dd>
            \(nextRun)            <dt>leased by</dt><dd>\(detail.leasedBy.map { "\($0) until \(DisplayFormat.time(detail.leaseExpiresAt))" })</dd>
            <dt>finished</dt><dd>\(DisplayFormat.time(job.finishedAt))</dd>
            </dl></section>
            """
        let content: HTML = """
            \(facts)<h2>Ledger rows</h2>\(LedgerTable.render(detail.ledger))<h2>Alerts</h2>\(AlertTable.render(detail.alerts, user: user, actions: false))
            """
        return Layout.page(title: "Job #\(job.id)", current: "/jobs", user: user, content)
    }

    /// The state's and the outcome's meaning, written out (not only a tooltip: phones have none).
    private var meaning: HTML {
        let job = detail.job
        let words = job.settledSince ? [] : [job.state, job.outcome].compactMap { $0 }
        let lines = words.compactMap { word in Explanations.word(word).map { "\(word): \($0)" } }
        return HTML.join(lines.map { line -> HTML in "<span class=\"why block\">\(line)</span>" })
    }

    private var errorMeaning: HTML {
        let lines = detail.job.lastError.map(Explanations.lastError) ?? []
        return HTML.join(lines.map { line -> HTML in "<span class=\"why block\">\(line)</span>" })
    }

    private var creditedSinceNote: HTML {
        let job = detail.job
        guard job.settledSince else { return "" }
        let since: HTML = job.creditedSince ? "every one of its transactions has been credited since (see the ledger rows below)"
            : "support closed its alert without crediting (see the alert's note below)"
        return " <span class=\"note\">It ended \(job.state) / \(job.outcome), but \(since): nothing is owed.</span>"
    }

    /// A finished job never runs again: its run_at is history, not a schedule.
    private var nextRun: HTML {
        guard detail.job.finishedAt == nil else { return "" }
        return "<dt>next run</dt><dd>\(DisplayFormat.time(detail.runAt))</dd>"
    }
}

/// Ledger rows wherever they are listed (job, user).
enum LedgerTable {
    static func render(_ rows: [LedgerRow]) -> HTML {
        Components.table(["transaction", "order", "user", "product", "qty", "env", "credited", "by", "job", "refunded"], rows.map { row in
            [Components.searchLink(row.transactionID), Components.searchLink(row.orderID), Components.userLink(row.userID),
             "\(row.productID)", "\(row.quantity)", "\(row.environment)", "\(DisplayFormat.time(row.creditedAt))", "\(row.creditedBy)",
             Components.jobLink(row.jobID),
             row.revokedAt.map { "\(DisplayFormat.time($0)) (reason \(row.revocationReason ?? "–"))" } ?? "–"]
        }, empty: "No ledger rows.")
    }
}

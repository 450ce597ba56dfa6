/// Reconciliation with Apple's books: each Pacific day newest first, its outcome, and per
/// in-app product Apple's units and returns against the ledger's credits and revocations, with the
/// `reconciliation_gap` alerts the day raised.
struct ReconciliationPage {
    let days: [ReconciledDay]
    let hasMore: Bool
    let before: String?

    /// The words this page shows, each with what it means and what to do.
    static let meanings: [String: String] = [
        "clean": "Apple's units and returns match the ledger's credits and revocations for every in-app product. Nothing to do.",
        "gap": "At least one product differs; its reconciliation_gap alert says how. Where Apple sold more, the buyers who could be "
            + "named had their purchase histories pulled and the missing purchases queued; follow the alert.",
        "not_available": "Apple has not published this day's sales report yet (due by 8 a.m. Pacific the next day). The leader "
            + "tries again every hour; nothing to do unless it lasts more than 48 hours.",
        "no sales": "Apple published no report for the day after it was due: Apple sold nothing that day. A credit on that day is a gap.",
        "gap (units)": "Apple's units minus the units credited. Positive: paid purchases not credited. Negative: credits Apple never sold.",
        "returns gap": "Apple's returned units minus the ledger's revocations. Positive: refunds the ledger did not revoke. "
            + "Negative: revocations Apple shows no return for.",
        "open": "The alert is open: someone has to act on it (see the Alerts page).",
        "resolved": "A later run found the product-day matching, or support resolved it.",
    ]

    static func meaning(_ word: String) -> String? { meanings[word] }

    func render(_ user: ConsoleUser) -> HTML {
        let intro: HTML = """
            <p>Each Pacific day, Apple's daily sales summary is compared with the ledger per in-app product: units sold with \
            credits, returns with revocations, by Apple purchase date. A day that differs raises a reconciliation_gap alert per \
            product: <a href="/alerts?kind=reconciliation_gap">see them all</a>.</p>
            """
        let legend = Components.legend(days.map(\.status) + ["no sales", "gap (units)", "returns gap", "open", "resolved"], meaning: Self.meaning)
        let body: HTML = days.isEmpty ? "<p class=\"empty\">No day has been reconciled yet.</p>" : HTML.join(days.map(section))
        var pager: [HTML] = []
        if before != nil { pager.append("<a href=\"/reconciliation\">← Newest</a>") }
        if hasMore, let last = days.last { pager.append("<a href=\"/reconciliation\(FormFields.query(["before": last.day]))\">Older days →</a>") }
        return Layout.page(title: "Reconciliation", current: "/reconciliation", user: user, "\(intro)\(legend)\(body)<nav class=\"pager\">\(pager)</nav>")
    }

    private func section(_ day: ReconciledDay) -> HTML {
        let noSales: HTML = day.noSales ? " \(Self.badge("no sales", tone: "neutral"))" : ""
        let table = Components.table(["product", "Apple units", "Apple returns", "credited", "revoked", "gap (units)", "returns gap", "alerts"],
                                     day.products.map { p in
            ["\(p.productID)", "\(p.appleUnits)", "\(p.appleReturns)", "\(p.credited)", "\(p.revoked)", Self.difference(p.gap),
             Self.difference(p.returnsGap), HTML.join(p.alerts.map(Self.alertLink), separator: " ")]
        }, empty: day.status == "not_available" ? "Apple's report is not available yet." : "No in-app sales and no credits that day.")
        return """
            <section id="day-\(day.day)"><h2>\(day.day) \(Self.badge(day.status, tone: Self.tone(day.status)))\(noSales)</h2>\
            <p class="why">\(Self.meaning(day.status) ?? "") Checked \(DisplayFormat.time(day.checkedAt)).</p>\(table)</section>
            """
    }

    /// The alert itself, at the top of the alerts page (its keyset cursor), and its state.
    static func alertLink(_ alert: (id: Int, state: String)) -> HTML {
        let cursor = alert.state == "open" ? "open_before" : "resolved_before"
        let href = "/alerts" + FormFields.query(["kind": "reconciliation_gap", cursor: String(alert.id + 1)]) + "#alert-\(alert.id)"
        return "<a href=\"\(href)\">#\(alert.id)</a> \(badge(alert.state, tone: alert.state == "open" ? "bad" : "ok"))"
    }

    private static func difference(_ value: Int) -> HTML {
        value == 0 ? "0" : "<strong>\(value > 0 ? "+" : "")\(value)</strong>"
    }

    private static func tone(_ status: String) -> String {
        switch status {
        case "clean": "ok"
        case "gap": "bad"
        default: "warn"
        }
    }

    /// A status word with its meaning as the tooltip (the legend above says it on a phone).
    private static func badge(_ word: String, tone: String) -> HTML {
        "<span class=\"badge \(tone)\" title=\"\(meaning(word) ?? "")\">\(word)</span>"
    }
}

/// Alerts, open first, with credit to order and resolve with note for the support role.
struct AlertsPage {
    /// Only this kind is listed (from the overview's alert-kind links); nil lists every kind.
    let kind: String?
    let open: [AlertRow]
    let openHasMore: Bool
    let resolved: [AlertRow]
    let resolvedHasMore: Bool
    let cursors: (open: Int?, resolved: Int?)
    let context: FormContext
    let openOrders: OpenOrders

    func render(_ user: ConsoleUser) -> HTML {
        var pager: [HTML] = []
        if cursors.open != nil || cursors.resolved != nil { pager.append("<a href=\"/alerts\(FormFields.query(["kind": kind]))\">← Newest</a>") }
        if openHasMore, let last = open.last {
            pager.append("<a href=\"/alerts\(FormFields.query(["kind": kind, "open_before": String(last.id)]))\">Older open →</a>")
        }
        if resolvedHasMore, let last = resolved.last {
            pager.append("<a href=\"/alerts\(FormFields.query(["kind": kind, "resolved_before": String(last.id)]))\">Older resolved →</a>")
        }
        let content: HTML = """
            \(Components.outcome(context.flash, rowShown: AlertTable.shows(open + resolved, context.flash)))\
            \(filterNote)<h2>Open</h2>\(AlertTable.kindLegend(open))\(AlertTable.render(open, user: user, actions: true, context: context, openOrders: openOrders))\
            <h2>Resolved</h2>\(AlertTable.render(resolved, user: user, actions: false, context: context))<nav class="pager">\(pager)</nav>
            """
        return Layout.page(title: kind.map { "Alerts: \($0)" } ?? "Alerts", current: "/alerts", user: user, content)
    }

    private var filterNote: HTML {
        guard let kind else { return "" }
        return "<p class=\"filter\">Only \(Components.badge(kind, meaning: Explanations.alertKind)) alerts. <a href=\"/alerts\">Show every kind</a></p>"
    }
}

/// Alert rows wherever they are listed; open ones carry the action forms for the support role.
enum AlertTable {
    static func render(_ alerts: [AlertRow], user: ConsoleUser, actions: Bool, context: FormContext = .none,
                       openOrders: OpenOrders = .none) -> HTML {
        Components.table(["alert", "kind", "user", "order", "product", "transaction", "reason", "since", "state", ""], alerts.map { alert in
            // The job link stays in the first cell: for support the last cell holds the action forms.
            ["<span id=\"alert-\(alert.id)\">#\(alert.id)</span>\(alert.jobID.map { id -> HTML in " <span class=\"why\">job</span> \(Components.jobLink(id))" } ?? "")", Components.badge(alert.kind, quiet: alert.state != "open", meaning: Explanations.alertKind), Components.userLink(alert.userID),
             Components.searchLink(alert.orderID), "\(alert.productID)", Components.searchLink(alert.transactionID), reason(alert),
             "\(DisplayFormat.time(alert.firstSeenAt))",
             alert.state == "open" ? Components.badge(alert.state) : "\(Components.badge(alert.state)) \(resolved(alert))",
             // The outcome of a form about this alert (done, or refused and why) where the eye is: at its row.
             "\(Components.beside(context.flash, rowID: "alert-\(alert.id)"))\(actionCell(alert, user: user, actions: actions, context: context, openOrders: openOrders))"]
        }, empty: "No alerts.")
    }

    private static func actionCell(_ alert: AlertRow, user: ConsoleUser, actions: Bool, context: FormContext, openOrders: OpenOrders) -> HTML {
        guard actions && user.role.mayAct && alert.state == "open" else { return Components.jobLink(alert.jobID) }
        return AlertForms(alert: alert, user: user, context: context, openOrders: openOrders.orders(for: alert)).render()
    }

    /// Whether `alerts` holds the row a form's outcome is about.
    static func shows(_ alerts: [AlertRow], _ flash: Flash?) -> Bool {
        guard let rowID = flash?.rowID else { return false }
        return alerts.contains { "alert-\($0.id)" == rowID }
    }

    /// When and how it was resolved.
    private static func resolved(_ alert: AlertRow) -> HTML {
        "<span class=\"why block\">at \(DisplayFormat.time(alert.resolvedAt))</span> \(alert.resolution)"
    }

    /// The machine word and, beside it, what it means.
    private static func reason(_ alert: AlertRow) -> HTML {
        guard let meaning = Explanations.word(alert.reason) else { return "\(alert.reason)" }
        return "\(alert.reason) <span class=\"why\">\(meaning)</span>"
    }

    /// What to do with each kind shown, open by default where there are open alerts to act on.
    static func kindLegend(_ alerts: [AlertRow]) -> HTML {
        Components.legend(alerts.map(\.kind), open: alerts.contains { $0.state == "open" }, meaning: Explanations.alertKind)
    }
}

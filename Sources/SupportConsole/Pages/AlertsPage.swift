/// Alerts, open first, with credit to order and resolve with note for the support role.
struct AlertsPage {
    let open: [AlertRow]
    let openHasMore: Bool
    let resolved: [AlertRow]
    let resolvedHasMore: Bool
    let cursors: (open: Int?, resolved: Int?)
    let context: FormContext

    func render(_ user: ConsoleUser) -> HTML {
        var pager: [HTML] = []
        if cursors.open != nil || cursors.resolved != nil { pager.append("<a href=\"/alerts\">← Newest</a>") }
        if openHasMore, let last = open.last {
            pager.append("<a href=\"/alerts\(FormFields.query(["open_before": String(last.id)]))\">Older open →</a>")
        }
        if resolvedHasMore, let last = resolved.last {
            pager.append("<a href=\"/alerts\(FormFields.query(["resolved_before": String(last.id)]))\">Older resolved →</a>")
        }
        let content: HTML = """
            \(Components.notice(context.flash?.message, tone: context.flash?.tone ?? "ok"))\
            <h2>Open</h2>\(AlertTable.kindLegend(open))\(AlertTable.render(open, user: user, actions: true, context: context))\
            <h2>Resolved</h2>\(AlertTable.render(resolved, user: user, actions: false))<nav class="pager">\(pager)</nav>
            """
        return Layout.page(title: "Alerts", current: "/alerts", user: user, content)
    }
}

/// Alert rows wherever they are listed; open ones carry the action forms for the support role.
enum AlertTable {
    static func render(_ alerts: [AlertRow], user: ConsoleUser, actions: Bool, context: FormContext = .none) -> HTML {
        Components.table(["alert", "kind", "user", "order", "product", "transaction", "reason", "since", "state", ""], alerts.map { alert in
            ["<span id=\"alert-\(alert.id)\">#\(alert.id)</span>", Components.badge(alert.kind, quiet: alert.state != "open", meaning: Explanations.alertKind), Components.userLink(alert.userID),
             Components.searchLink(alert.orderID), "\(alert.productID)", Components.searchLink(alert.transactionID), reason(alert),
             "\(DisplayFormat.time(alert.firstSeenAt))",
             alert.state == "open" ? Components.badge(alert.state) : "\(Components.badge(alert.state)) \(alert.resolution)",
             actions && user.role.mayAct && alert.state == "open" ? forms(alert, user, context) : Components.jobLink(alert.jobID)]
        }, empty: "No alerts.")
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

    private static func forms(_ alert: AlertRow, _ user: ConsoleUser, _ context: FormContext) -> HTML {
        let back: HTML = "<input type=\"hidden\" name=\"return_to\" value=\"\(context.returnTo)\">"
        let refusal: HTML = context.flash.flatMap { $0.tone == "bad" && $0.alertID == alert.id ? $0.message : nil }
            .map { "<p class=\"notice bad inline-error\" role=\"alert\">\($0)</p>" } ?? ""
        let credit: HTML = alert.isCreditable ? """
            <form class="inline" method="post" action="/alerts/\(alert.id)/credit" data-confirm="Credit this payment to the order?">\
            \(Components.csrfField(user))\(back)<input type="text" name="order_id" required placeholder="order id" \
            value="\(context.typed("order_id", alertID: alert.id))" aria-label="Order id for alert \(alert.id)">\
            <button type="submit">Credit to order</button></form>
            """ : ""
        return """
            \(refusal)\(credit)<form class="inline" method="post" action="/alerts/\(alert.id)/resolve">\(Components.csrfField(user))\(back)\
            <input type="text" name="note" required placeholder="what was done" value="\(context.typed("note", alertID: alert.id))" \
            aria-label="Note for alert \(alert.id)">\
            <button type="submit" class="secondary">Resolve</button></form>
            """
    }
}

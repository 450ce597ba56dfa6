import Settlement

/// The audit log, newest first, keyset pages.
struct AuditPage {
    let entries: [AuditEntry]
    let hasMore: Bool
    let before: Int?

    func render(_ user: ConsoleUser) -> HTML {
        let table = Components.table(["#", "at", "actor", "action", "target", "details"], entries.map { entry in
            ["\(entry.id)", "\(DisplayFormat.time(entry.at))", "\(entry.actor)", Components.badge(entry.action), "\(entry.target)",
             "<span class=\"error-text\">\(entry.detailsJSON)</span>"]
        }, empty: "No entries.")
        var pager: [HTML] = []
        if before != nil { pager.append("<a href=\"/audit\">← Newest</a>") }
        if hasMore, let last = entries.last { pager.append("<a href=\"/audit\(FormFields.query(["before": String(last.id)]))\">Older →</a>") }
        return Layout.page(title: "Audit log", current: "/audit", user: user, "\(table)<nav class=\"pager\">\(pager)</nav>")
    }
}

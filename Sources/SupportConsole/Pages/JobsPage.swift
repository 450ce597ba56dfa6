/// The jobs search: one box for a user, order, Apple transaction or job id; filters; keyset pages.
struct JobsPage {
    let criteria: JobSearchCriteria
    let jobs: [JobSummary]
    let hasMore: Bool

    func render(_ user: ConsoleUser) -> HTML {
        let form: HTML = """
            <form class="card search" method="get" action="/jobs" role="search">\
            <input type="search" name="q" value="\(criteria.text ?? "")" placeholder="user id, order id, Apple transaction id or job id" aria-label="Search">\
            \(Components.select("state", label: "state", options: JobVocabulary.states, selected: criteria.state))\
            \(Components.select("outcome", label: "outcome", options: JobVocabulary.outcomes, selected: criteria.outcome))\
            \(Components.select("kind", label: "kind", options: JobVocabulary.kinds, selected: criteria.kind))\
            <button type="submit">Search</button></form>
            """
        let rows = jobs.map { job -> [HTML] in
            [Components.jobLink(job.id), "\(job.kind)", Components.userLink(job.userID), Components.searchLink(job.orderID),
             Components.jobStatus(job).state, Components.jobStatus(job).outcome, "\(job.attempts)", "\(DisplayFormat.time(job.createdAt))"]
        }
        let table = Components.table(["job", "kind", "user", "order", "state", "outcome", "attempts", "created"], rows,
                                     empty: "No jobs match.")
        let words = jobs.flatMap { job -> [String?] in job.settledSince ? ["resolved", Components.settledWord(job)] : [job.state, job.outcome] }
        return Layout.page(title: "Jobs", current: "/jobs", user: user, "\(form)\(Components.legend(words))\(table)\(pager)")
    }

    private var pager: HTML {
        var links: [HTML] = []
        if criteria.before != nil { links.append("<a href=\"/jobs\(query(before: nil))\">← Newest</a>") }
        if hasMore, let last = jobs.last { links.append("<a rel=\"next\" href=\"/jobs\(query(before: last.id))\">Older →</a>") }
        return "<nav class=\"pager\">\(links)</nav>"
    }

    private func query(before: Int?) -> String {
        FormFields.query(["q": criteria.text, "state": criteria.state, "outcome": criteria.outcome, "kind": criteria.kind,
                          "before": before.map { String($0) }])
    }
}

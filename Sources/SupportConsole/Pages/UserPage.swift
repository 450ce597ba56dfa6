/// A buyer: the verdict and story, then orders, ledger, refunds, alerts and latest jobs.
struct UserPage {
    let activity: UserActivity
    var context: FormContext = .none
    var openOrders: OpenOrders = .none

    func render(_ user: ConsoleUser) -> HTML {
        let orders = Components.table(["order", "product", "qty", "status", "created", "credited", "transaction"], activity.orders.map { order in
            [Components.searchLink(order.orderID), "\(order.productID)", "\(order.quantity)", Components.badge(order.status),
             "\(DisplayFormat.time(order.createdAt))", "\(DisplayFormat.time(order.creditedAt))", Components.searchLink(order.transactionID)]
        }, empty: "No orders.")
        let jobs = Components.table(["job", "kind", "order", "state", "outcome", "created"], activity.jobs.map { job in
            [Components.jobLink(job.id), "\(job.kind)", Components.searchLink(job.orderID), Components.jobStatus(job).state,
             Components.jobStatus(job).outcome, "\(DisplayFormat.time(job.createdAt))"]
        }, empty: "No jobs.")
        let content: HTML = """
            \(Components.outcome(context.flash, rowShown: AlertTable.shows(activity.alerts, context.flash)))\(StorySection(activity: activity).render())<h2>Orders</h2>\(orders)<h2>Ledger</h2>\(LedgerTable.render(activity.ledger))\
            <h2>Refunds</h2>\(LedgerTable.render(activity.refunds))\
            <h2>Alerts</h2>\(AlertTable.render(activity.alerts, user: user, actions: true, context: context, openOrders: openOrders))<h2>Jobs</h2>\(Components.legend(jobWords))\(jobs)\(olderJobs)
            """
        return Layout.page(title: "User \(activity.userID)", current: "/jobs", user: user, content)
    }

    private var jobWords: [String?] {
        activity.jobs.flatMap { job -> [String?] in job.settledSince ? ["resolved", Components.settledWord(job)] : [job.state, job.outcome] }
    }

    /// The list stops at a page of jobs; say so and link on rather than cutting it silently.
    private var olderJobs: HTML {
        var links: [HTML] = []
        if activity.jobsBefore != nil { links.append("<a href=\"\(ConsoleFind.userHref(activity.userID))\">← Newest jobs</a>") }
        if activity.moreJobs, let last = activity.jobs.last {
            let href = "/users" + FormFields.query(["id": activity.userID, "jobs_before": String(last.id)])
            links.append("<span>Showing \(activity.jobs.count) jobs; older ones follow.</span> <a rel=\"next\" href=\"\(href)\">Older jobs →</a>")
        }
        return "<nav class=\"pager\">\(links)</nav>"
    }
}

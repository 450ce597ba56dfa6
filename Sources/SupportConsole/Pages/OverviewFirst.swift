/// The top of the overview: what to do first, most harm first (buyers who paid and got nothing,
/// a fleet that is down, Apple refusing our configuration, Apple erring on many jobs, any other
/// open alert), each with where to act; or that nothing needs a person now.
struct OverviewFirst {
    let openAlerts: [String: Int]
    let workers: WorkersAlive
    let hour: ThroughputWindow

    /// An Apple error rate at or above this share of the last hour's finished jobs is flagged.
    static let appleErrorRateFlag = 0.10
    /// Too few finished jobs say nothing about a rate.
    static let appleErrorRateMinimumJobs = 20

    static func appleErrorRateIsHigh(_ window: ThroughputWindow) -> Bool {
        window.finished >= appleErrorRateMinimumJobs && Double(window.retried) >= appleErrorRateFlag * Double(window.finished)
    }

    func render() -> HTML {
        var steps: [HTML] = []
        if let unpaid = openAlerts["paid_not_credited"], unpaid > 0 {
            steps.append("""
                <a href="/alerts?kind=paid_not_credited">\(unpaid) payment(s) not credited</a>: the buyers paid and got nothing; \
                credit each to the buyer's order.
                """)
        }
        if workers.count == 0 {
            steps.append("<a href=\"#workers\">No worker is alive</a>: \(WorkersCard.lastSeen(workers)) Ask an operator to start <code>receipt-worker work</code>.")
        }
        if let config = openAlerts["config_error"], config > 0 {
            steps.append("<a href=\"/alerts?kind=config_error\">Apple refuses our configuration</a> (\(config) alert(s)): an operator fixes the setting.")
        }
        if Self.appleErrorRateIsHigh(hour) {
            steps.append("""
                Apple error rate \(DisplayFormat.percent(hour.retried, of: hour.finished)) in the last hour: Apple is failing or slow; \
                <a href="/jobs?state=retrying">see the retrying jobs' last errors</a>.
                """)
        }
        let others = openAlerts.filter { $0.key != "paid_not_credited" && $0.key != "config_error" }.values.reduce(0, +)
        if others > 0 { steps.append("<a href=\"/alerts\">\(others) other open alert(s)</a>: each says what to do beside it.") }
        let list: HTML = steps.isEmpty ? "<p class=\"calm\">Nothing needs a person now.</p>"
            : "<ol class=\"first\">\(HTML.join(steps.map { step -> HTML in "<li>\(step)</li>" }))</ol>"
        return "<section class=\"card first\" aria-labelledby=\"first-heading\"><h2 id=\"first-heading\">Do first</h2>\(list)</section>"
    }
}

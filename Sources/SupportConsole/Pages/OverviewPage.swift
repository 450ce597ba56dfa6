import Foundation
import Queue

/// Jobs by state, oldest queued age, throughput and outcomes over the last hour and day, open
/// alerts by kind, and the Apple error rate; refreshes itself every 30 s when scripts run.
struct OverviewPage {
    let queue: QueueSnapshot
    let openAlerts: [String: Int]
    let hour: ThroughputWindow
    let day: ThroughputWindow
    let now: Date
    /// Of the attention jobs, those settled since (credited, or closed as owed nothing): not open work.
    var settledSince = SettledSince()
    var workers = WorkersAlive(names: [], leader: nil, connected: 0)

    func render(_ user: ConsoleUser) -> HTML {
        let states = HTML.join(QueueSnapshot.states.map { state -> HTML in
            let approx = queue.estimatedStates.contains(state) ? "~" : ""
            // Each tile opens the jobs list filtered to its state.
            return """
                <div class="tile"><dt><a href="/jobs\(FormFields.query(["state": state]))">\(Components.badge(state))</a></dt>\
                \(Self.count(queue.jobsByState[state] ?? 0, prefix: approx))\(state == "attention" ? settledNote : "")</dd></div>
                """
        })
        let alerts = HTML.join(openAlerts.sorted { $0.key < $1.key }.map { kind, count -> HTML in
            """
            <div class="tile"><dt><a href="/alerts\(FormFields.query(["kind": kind]))">\(Components.badge(kind, meaning: Explanations.alertKind))</a></dt>\
            \(Self.count(count))</dd></div>
            """
        })
        let content: HTML = """
            \(OverviewFirst(openAlerts: openAlerts, workers: workers, hour: hour).render())
            <div class="grid">
            <section class="card"><h2>Jobs by state</h2><dl class="stats">\(states)\
            <div><dt>oldest queued</dt><dd>\(DisplayFormat.age(queue.oldestQueuedAgeSeconds))</dd></div></dl></section>
            <section class="card"><h2>Open alerts</h2><dl class="stats">\(alerts)</dl></section>
            \(WorkersCard(workers: workers, queued: queue.jobsByState["queued"] ?? 0).render())
            </div>
            <div class="grid">
            \(window(hour, title: "Last hour", bucketWord: "minute"))
            \(window(day, title: "Last 24 hours", bucketWord: "hour"))
            </div>
            """
        return Layout.page(title: "Overview", current: "/", user: user, refreshSeconds: 30, content)
    }

    /// A count's opening `<dd>`: a zero is quiet (greyed), so the counts that matter stand out.
    private static func count(_ value: Int, prefix: String = "") -> HTML {
        "<dd\(HTML(trusted: value == 0 ? " class=\"zero\"" : ""))>\(prefix)\(value)"
    }

    /// "3 still open: 1 credited since, 1 closed as owed nothing": the attention count keeps the
    /// queue's own figure, and this says how much of it is still work.
    private var settledNote: HTML {
        guard settledSince.total > 0 else { return "" }
        let open = max(0, (queue.jobsByState["attention"] ?? 0) - settledSince.total)
        var settled: [String] = []
        if settledSince.credited > 0 { settled.append("\(settledSince.credited) credited since") }
        if settledSince.closedUnpaid > 0 { settled.append("\(settledSince.closedUnpaid) closed as owed nothing") }
        return " <span class=\"why block\">\(open) still open: \(settled.joined(separator: ", "))</span>"
    }

    private func errorRateNote(_ window: ThroughputWindow) -> HTML {
        guard OverviewFirst.appleErrorRateIsHigh(window) else { return "" }
        return " <span class=\"why block\">high: Apple is failing or slow (flagged from \(Int(OverviewFirst.appleErrorRateFlag * 100)) %)</span>"
    }

    /// Five clock times (UTC) under the bars: the oldest bucket, three between, and the newest.
    private func axis(_ window: ThroughputWindow) -> [String] {
        let starts = window.bucketStarts(now: now)
        guard starts.count > 1 else { return [] }
        return (0...4).map { step in DisplayFormat.clock(starts[(starts.count - 1) * step / 4]) }
    }

    private func window(_ window: ThroughputWindow, title: String, bucketWord: String) -> HTML {
        let series = window.series(now: now).map(Double.init)
        return """
            <section class="card"><h2>\(title)</h2>
            <dl class="stats"><div><dt>finished</dt><dd>\(window.finished)</dd></div>\
            <div\(HTML(trusted: OverviewFirst.appleErrorRateIsHigh(window) ? " class=\"flag\"" : ""))><dt>Apple error rate</dt>\
            <dd>\(DisplayFormat.percent(window.retried, of: window.finished))\(errorRateNote(window))</dd></div></dl>
            \(SVGChart.bars(series, caption: "Jobs finished per \(bucketWord)", axis: axis(window)))
            \(SVGChart.labelledBars(window.byOutcome.map { ($0.outcome, $0.count) }, caption: "Outcomes"))
            <p class="empty">Apple error rate: the share of finished jobs that met an Apple error, timeout or retryable status before their outcome.</p>
            </section>
            """
    }
}

/// The overview's "Workers alive": how many, their names, the leader, and a warning in red when
/// jobs wait and nothing is there to run them.
struct WorkersCard {
    let workers: WorkersAlive
    let queued: Int

    func render() -> HTML {
        let names = HTML.join(workers.names.map { name -> HTML in
            "<li><code>\(name)</code>\(HTML(trusted: name == workers.leader ? " <span class=\"badge neutral\">leader</span>" : ""))</li>"
        })
        let idle = workers.connected > workers.names.count
            ? "<p class=\"why\">\(workers.connected - workers.names.count) more connected but holding no job now (idle).</p>" : HTML("")
        // An empty queue with no worker looks calm, but new payments would wait: said either way.
        let warning: HTML = workers.count == 0
            ? """
              <p class="notice bad" role="alert">\(queued > 0 ? "No worker is alive while \(queued) job(s) are queued: nothing is draining the queue."
                  : "No worker is alive: the queue is empty now, but new payments will wait.") \(Self.lastSeen(workers)) \
              Ask an operator to start <code>receipt-worker work</code>.</p>
              """
            : ""
        return """
            <section class="card workers" id="workers"><h2>Workers alive</h2><dl class="stats"><div><dt>alive</dt><dd>\(workers.count)</dd></div></dl>\
            \(warning)\(workers.names.isEmpty ? HTML("") : "<ul class=\"workers\">\(names)</ul>")\(idle)\
            <p class="why">From running jobs' unexpired leases, the leadership lease and the workers' database sessions.</p></section>
            """
    }

    /// "Last seen: host-b (the leader) until 2026-11-27 04:21 UTC."
    static func lastSeen(_ workers: WorkersAlive) -> String {
        guard let last = workers.lastSeen else { return "No worker has been seen by this database (no leadership lease on record)." }
        return "Last seen: \(last.leader), whose leadership lease ran out at \(BuyerVerdict.minute(last.until))."
    }
}

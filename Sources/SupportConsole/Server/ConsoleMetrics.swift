import Observability

/// `iap_console_requests_total{page,status}` and the request duration histogram.
struct ConsoleMetrics: Sendable {
    let requests: CounterFamily
    let duration: HistogramFamily

    init(registry: MetricsRegistry) {
        requests = registry.counter("iap_console_requests_total", help: "Console HTTP requests by page and status.",
                                    labelNames: ["page", "status"])
        duration = registry.histogram("iap_console_request_duration_seconds", help: "Console request time on the server, by page.",
                                      labelNames: ["page"])
    }

    /// Route patterns to page names: bounded labels whatever URL is probed.
    static let pages: [String: String] = [
        "/": "overview", "/jobs": "jobs", "/jobs/{id}": "job", "/users": "user", "/alerts": "alerts",
        "/alerts/{id}/credit": "alert_credit", "/alerts/{id}/resolve": "alert_resolve", "/lookup": "lookup",
        "/lookup/credit": "lookup_credit", "/audit": "audit", "/login": "login", "/logout": "logout", "/find": "find",
        "/static/console.css": "static", "/static/console.js": "static", "/metrics": "metrics", "/healthz": "healthz",
        "/reconciliation": "reconciliation",
    ]

    func observe(route: String, status: Int, seconds: Double) {
        let page = Self.pages[route] ?? (route == "unmatched" ? "unmatched" : "other")
        requests.labels(page, String(status)).inc()
        duration.labels(page).observe(seconds)
    }
}

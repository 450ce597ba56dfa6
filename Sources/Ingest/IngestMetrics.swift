import Observability

/// The ingest process's own metrics. Families are registered up front so they render (with HELP and
/// TYPE) before the first request.
public struct IngestMetrics: Sendable {
    public let registry: MetricsRegistry
    let requests: CounterFamily
    let requestDuration: HistogramFamily
    let jobsEnqueued: CounterFamily

    public init(registry: MetricsRegistry) {
        self.registry = registry
        requests = registry.counter("iap_ingest_requests_total", help: "Ingest HTTP requests by route pattern and status.",
                                    labelNames: ["route", "status"])
        requestDuration = registry.histogram("iap_ingest_request_duration_seconds",
                                             help: "Ingest HTTP request duration, first byte to response queued.",
                                             labelNames: ["route"])
        jobsEnqueued = registry.counter("iap_ingest_jobs_enqueued_total",
                                        help: "New jobs created by the ingest API (re-submissions of an existing job excluded).",
                                        labelNames: ["kind"])
        for kind in IngestJobKind.allCases { _ = jobsEnqueued.labels(kind.rawValue) }
    }

    /// For `HTTPServerConfiguration.onRequestCompleted` (runs on the I/O thread: counters only).
    /// The server's own rejections (413, 431, 408…) come with an empty route.
    public func recordRequest(method: String, route: String, status: Int, durationSeconds: Double) {
        let label = route.isEmpty ? "none" : route
        requests.labels(label, String(status)).inc()
        requestDuration.labels(label).observe(durationSeconds)
    }

    func recordEnqueued(_ kind: IngestJobKind, _ result: EnqueueResult) {
        if result.created { jobsEnqueued.labels(kind.rawValue).inc() }
    }
}

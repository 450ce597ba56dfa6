import Observability

/// The queue's metrics (names fixed by the contract; see docs/reference.md).
public struct QueueMetrics: Sendable {
    let claimed: CounterFamily
    let finished: CounterFamily
    let retries: CounterFamily
    let inflight: GaugeFamily

    public init(registry: MetricsRegistry) {
        claimed = registry.counter("iap_jobs_claimed_total", help: "Jobs claimed by this process.")
        finished = registry.counter("iap_jobs_finished_total", help: "Jobs finished, by outcome.", labelNames: ["outcome"])
        retries = registry.counter("iap_job_retries_total", help: "Attempts that will be retried, by reason.", labelNames: ["reason"])
        inflight = registry.gauge("iap_inflight_verifications", help: "Jobs being verified by this process now.")
    }

    /// Jobs this process finished with `outcome` so far (benchmarks watch their drain by it).
    public func finishedCount(outcome: String) -> Int { Int(finished.labels(outcome).value) }
}

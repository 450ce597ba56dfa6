import Observability
import Postgres
import Queue
import Settlement

/// Samples queue depth and open alerts from the database every few seconds (never per
/// scrape, so a scrape storm cannot load the database), and only while `shouldSample`
/// holds: workers pass "I hold the maintenance lock", so a fleet of N workers counts the
/// jobs table once per interval, not N times (dashboards and alert rules use max()).
enum DatabaseGauges {
    static func start(client: PostgresClient, registry: MetricsRegistry, every seconds: Double = 5,
                      shouldSample: @escaping @Sendable () -> Bool = { true }) -> Task<Void, Never> {
        let jobs = registry.gauge("iap_jobs", help: "Jobs by state (sampled).", labelNames: ["state"])
        let oldest = registry.gauge("iap_queue_oldest_age_seconds", help: "Age of the oldest queued job (sampled).")
        let alerts = registry.gauge("iap_alerts_open", help: "Open alerts by kind (sampled).", labelNames: ["kind"])
        return Task {
            while !Task.isCancelled {
                guard shouldSample() else {
                    try? await Task.sleep(for: .seconds(seconds))
                    continue
                }
                if let snapshot = try? await QueueStatistics.snapshot(client) {
                    for (state, count) in snapshot.jobsByState { jobs.labels(state).set(Double(count)) }
                    oldest.set(snapshot.oldestQueuedAgeSeconds)
                }
                if let open = try? await AlertStatistics.openByKind(client) {
                    for (kind, count) in open { alerts.labels(kind).set(Double(count)) }
                }
                try? await Task.sleep(for: .seconds(seconds))
            }
        }
    }
}

import Observability
import Postgres

/// The database metrics: every call's result, and the pool's connections by state.
struct DatabaseMetrics: PostgresCallObserver {
    private let ok: Counter, error: Counter, timeout: Counter

    init(registry: MetricsRegistry) {
        let calls = registry.counter("iap_db_calls_total", help: "Database calls by result (ok, error, timeout).", labelNames: ["result"])
        (ok, error, timeout) = (calls.labels("ok"), calls.labels("error"), calls.labels("timeout"))
    }

    func databaseCallFinished(_ result: PostgresCallResult) {
        switch result {
        case .ok: ok.inc()
        case .error: error.inc()
        case .timeout: timeout.inc()
        }
    }

    /// `iap_db_connections{state}` sampled from the pool at scrape time.
    static func watch(_ client: PostgresClient, registry: MetricsRegistry) {
        registry.gaugeFunction("iap_db_connections", help: "Pooled database connections by state.", labelNames: ["state"]) {
            let counts = client.connectionCounts
            return [(["idle"], Double(counts.idle)), (["busy"], Double(counts.busy))]
        }
    }
}

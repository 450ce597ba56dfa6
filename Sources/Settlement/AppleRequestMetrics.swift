import AppStore
import Observability
import Synchronization

/// Apple request metrics and the once-per-process log of Apple's Deprecation/Sunset headers.
public final class AppleRequestMetrics: AppleRequestObserver {
    private let requests: CounterFamily
    private let duration: HistogramFamily
    private let deprecations: CounterFamily
    private let appStoreRequests: CounterFamily
    private let appStoreThrottled: CounterFamily
    private let logger: Logger
    private let announced = Mutex<Set<String>>([])

    public init(registry: MetricsRegistry, logger: Logger) {
        requests = registry.counter("iap_apple_requests_total", help: "Requests to Apple, by endpoint and result.",
                                    labelNames: ["endpoint", "result"])
        duration = registry.histogram("iap_apple_request_duration_seconds", help: "Apple request latency.",
                                      labelNames: ["endpoint"], buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 3, 4, 5, 6, 8, 10, 15, 30])
        deprecations = registry.counter("iap_apple_deprecation_notices_total", help: "Apple responses carrying Deprecation or Sunset headers.",
                                        labelNames: ["header"])
        appStoreRequests = registry.counter("iap_appstore_api_requests_total",
                                            help: "App Store Server API requests, by endpoint family and result.",
                                            labelNames: ["endpoint", "result"])
        appStoreThrottled = registry.counter("iap_appstore_api_throttled_total",
                                             help: "App Store Server API requests held back: apple_429 (the fleet pauses) or fleet_limit (no slot in time).",
                                             labelNames: ["source"])
        self.logger = logger
    }

    public func appStoreAPIRequestFinished(endpoint: String, result: String) {
        appStoreRequests.labels(endpoint, result).inc()
    }

    public func appStoreAPIThrottled(family: String, source: String) {
        appStoreThrottled.labels(source).inc()
    }

    public func appleRequestFinished(endpoint: String, result: String, seconds: Double) {
        requests.labels(endpoint, result).inc()
        duration.labels(endpoint).observe(seconds)
    }

    public func appleDeprecationNotice(header: String, value: String) {
        deprecations.labels(header.lowercased()).inc()
        let first = announced.withLock { $0.insert(header.lowercased()).inserted }
        if first { logger.warning("apple_deprecation_notice", ["header": .string(header), "value": .string(value)]) }
    }
}

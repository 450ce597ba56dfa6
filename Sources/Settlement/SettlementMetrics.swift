import Observability

/// Settlement's metrics (names fixed by the contract; see docs/reference.md).
public struct SettlementMetrics: Sendable {
    let credits: CounterFamily
    let alertsRaised: CounterFamily
    let creditsRevoked: CounterFamily
    let notifications: CounterFamily
    let historyEnqueued: CounterFamily
    let consumptionRequests: CounterFamily

    public init(registry: MetricsRegistry) {
        credits = registry.counter("iap_credits_total", help: "Apple transactions credited to an order (ledger rows written).")
        alertsRaised = registry.counter("iap_alerts_total", help: "Alerts raised, by kind.", labelNames: ["kind"])
        creditsRevoked = registry.counter("iap_credits_revoked_total", help: "Credits revoked by refunds.")
        notifications = registry.counter("iap_notifications_total", help: "App Store Server Notifications applied, by type.",
                                         labelNames: ["type"])
        historyEnqueued = registry.counter("iap_notification_history_enqueued_total",
                                           help: "Notifications Apple failed to deliver, found in Get Notification History and enqueued as new jobs.")
        consumptionRequests = registry.counter("iap_consumption_requests_total",
                                               help: "Refund requests (CONSUMPTION_REQUEST) answered, by result: sent, no_consent, failed, retry.",
                                               labelNames: ["result"])
        for result in ["sent", "no_consent", "failed", "retry"] { consumptionRequests.labels(result).add(0) }
        for kind in AlertKind.allCases { alertsRaised.labels(kind.rawValue).add(0) }
    }
}

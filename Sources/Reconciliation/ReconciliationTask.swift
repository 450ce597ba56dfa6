import AppStore
import Foundation
import Observability
import Queue

/// Reconciliation's metrics: the last gap per product and the last Pacific day Apple published and we compared.
public struct ReconciliationMetrics: Sendable {
    let gapUnits: GaugeFamily
    let lastDay: GaugeFamily

    public init(registry: MetricsRegistry) {
        gapUnits = registry.gauge("iap_reconciliation_gap_units", help: "Apple's units minus the ledger's credits, per in-app product, on the last reconciled day.",
                                  labelNames: ["product"])
        lastDay = registry.gauge("iap_reconciliation_last_day_timestamp_seconds",
                                 help: "Start (Pacific midnight) of the latest day reconciled against Apple's sales report.")
    }

    func record(_ result: ReconciliationResult) {
        guard result.available else { return }
        for product in result.products { gapUnits.labels(product.productID).set(Double(product.gap)) }
        let start = result.day.start.timeIntervalSince1970
        if start > lastDay.labels().value { lastDay.labels().set(start) }
    }
}

/// The leader's daily duty: reconciles the last `lookBackDays` finished Pacific days each `interval`
/// (Apple publishes a day by the next morning, sometimes later; a day not yet published is simply tried
/// again next time). Every run is idempotent, so a day compared twice, or by two leaders, is harmless.
public struct ReconciliationTask: MaintenanceTask {
    public let name = "reconciliation"
    public let interval: Double
    let reconciler: Reconciler
    let metrics: ReconciliationMetrics
    let lookBackDays: Int

    public init(reconciler: Reconciler, metrics: ReconciliationMetrics, interval: Double = 3600, lookBackDays: Int = 2) {
        self.reconciler = reconciler
        self.metrics = metrics
        self.interval = interval
        self.lookBackDays = max(1, lookBackDays)
    }

    public func run(term: LeaderTerm) async throws {
        for day in Self.finishedDays(before: Date(), count: lookBackDays) {
            do {
                metrics.record(try await reconciler.reconcile(day, term: term))
            } catch let error as ReconciliationError {
                reconciler.logger.warning("reconciliation_failed", ["day": .string(day.description), "reason": .string(error.apple.reason)])
            }
        }
    }

    /// The `count` Pacific days before the one `now` is in, oldest first.
    static func finishedDays(before now: Date, count: Int) -> [ReportDay] {
        var days: [ReportDay] = []
        var day = ReportDay(containing: now)
        for _ in 0..<count {
            day = ReportDay(containing: day.start.addingTimeInterval(-1))
            days.append(day)
        }
        return days.reversed()
    }
}

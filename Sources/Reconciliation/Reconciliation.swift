import AppStore
import Foundation
import Observability
import Postgres
import Queue
import Settlement

/// Where a day's sales summary comes from: the App Store Connect API (or a test's stand-in).
public protocol SalesReportSource: Sendable {
    func dailySummary(for day: ReportDay) async -> Result<SalesReportDownload, AppStoreAPIError>
}

extension SalesReportClient: SalesReportSource {}

/// The report could not be had (transport, credentials, a report we refuse to read).
public struct ReconciliationError: Error, Sendable, CustomStringConvertible {
    public var apple: AppStoreAPIError
    public var description: String { "sales report: \(apple.description)" }
}

/// Compares one Pacific day of Apple's sales summary with the ledger, per in-app product;
/// records the comparison in iap.reconciliation_days, opens a `reconciliation_gap` alert per product
/// that differs and resolves the day's alerts of products that now match. Re-runs are idempotent:
/// nothing is credited here, rows are upserted, an open alert is updated, not duplicated.
public struct Reconciler: Sendable {
    let client: PostgresClient
    let reports: any SalesReportSource
    let alerts: AlertRecorder
    let logger: Logger
    /// Pulls the buyers' histories behind a shortfall; nil when no App Store Server API is configured.
    let recovery: GapRecovery?
    private let store = ReconciliationStore()

    public init(client: PostgresClient, reports: any SalesReportSource, alerts: AlertRecorder, logger: Logger, recovery: GapRecovery? = nil) {
        self.client = client
        self.reports = reports
        self.alerts = alerts
        self.logger = logger
        self.recovery = recovery
    }

    /// Under a leader's `term` every write carries it: written after the term ended in the
    /// database, nothing changes (`LeaseEnded`).
    public func reconcile(_ day: ReportDay, term: LeaderTerm? = nil) async throws -> ReconciliationResult {
        guard let (apple, noSales) = try await download(day) else {
            logger.info("reconciliation_not_available", ["day": .string(day.description)])
            try await client.transaction { connection in
                try await term?.check(on: connection)
                try await store.saveOutcome(day, .notAvailable, noSales: false, on: connection)
            }
            return ReconciliationResult(day: day, available: false, products: [])
        }
        let checked = try await compare(day, apple, noSales: noSales, term: term)
        logger.info("reconciliation_checked", ["day": .string(day.description), "products": .int(checked.products.count),
                                               "gaps": .int(checked.gaps.count), "alerts_raised": .int(checked.alertsRaised),
                                               "alerts_resolved": .int(checked.alertsResolved), "no_sales": .bool(noSales)])
        guard let recovery else { return checked }
        return try await recoverShortfalls(checked, recovery, term: term)
    }

    /// Apple's report for `day` (empty for a day with no sales); nil while Apple has not published it.
    private func download(_ day: ReportDay) async throws -> (SalesSummaryReport, noSales: Bool)? {
        switch await reports.dailySummary(for: day) {
        case .failure(let error): throw ReconciliationError(apple: error)
        case .success(.notYetAvailable): return nil
        case .success(.noSales): return (.empty, true)
        case .success(.available(let report)): return (report, false)
        }
    }

    /// One transaction: the ledger's side, the day's rows, its gap alerts raised or resolved, its outcome.
    private func compare(_ day: ReportDay, _ apple: SalesSummaryReport, noSales: Bool, term: LeaderTerm?) async throws -> ReconciliationResult {
        let (checked, opened) = try await WitnessedTransaction(client: client).run { connection in
            try await term?.check(on: connection)
            let products = Self.compare(apple.inAppUnits, try await store.ledger(day, on: connection))
            try await store.saveDays(day, products, on: connection)
            var result = ReconciliationResult(day: day, available: true, noSales: noSales, products: products)
            var opened: [(NewAlert, Int)] = []
            for product in result.gaps {
                let alert = Self.alert(day, product)
                let raised = try await store.raiseGap(day, product, reason: alert.reason, on: connection)
                if raised.opened { opened.append((alert, raised.id)) }
            }
            result.alertsRaised = opened.count
            result.alertsResolved = try await store.resolveGaps(day, stillOpen: result.gaps.map(\.productID), on: connection)
            try await store.saveOutcome(day, result.gaps.isEmpty ? .clean : .gap, noSales: noSales, on: connection)
            return (result, opened)
        }
        // Announced once committed, as every alert is.
        for (alert, id) in opened { alerts.announce(alert, id: id, repeated: false) }
        return checked
    }

    /// Only a shortfall has buyers to look for; units credited that Apple never sold wait for support.
    /// What each pull found is added to the product-day's alert.
    private func recoverShortfalls(_ checked: ReconciliationResult, _ recovery: GapRecovery, term: LeaderTerm?) async throws -> ReconciliationResult {
        var result = checked
        let shortfalls = checked.gaps.filter { $0.gap > 0 }
        guard !shortfalls.isEmpty else { return result }
        result.notificationsEnqueued = await recovery.pullNotifications(of: checked.day)
        for product in shortfalls {
            try term?.check()
            let counts = try await recovery.recover(product: product.productID, day: checked.day, term: term)
            result.recovered[product.productID] = counts
            try await client.transaction { connection in
                try await term?.check(on: connection)
                try await store.noteRecovery(checked.day, product.productID, counts, on: connection)
            }
        }
        return result
    }

    /// The ledger aggregation of `day`, for plans (bench reconcile shows it is index-backed).
    public static func ledgerStatement(_ day: ReportDay) -> PostgresStatement { ReconciliationStore.ledgerStatement(day) }

    /// Every product either side knows, sorted.
    static func compare(_ apple: [SalesSummaryReport.ProductUnits], _ ledger: [String: (credited: Int, revoked: Int)]) -> [ReconciledProduct] {
        let appleByProduct = Dictionary(apple.map { ($0.productID, $0) }, uniquingKeysWith: { a, _ in a })
        return Set(appleByProduct.keys).union(ledger.keys).sorted().map { id in
            ReconciledProduct(productID: id, appleUnits: appleByProduct[id]?.units ?? 0, appleReturns: appleByProduct[id]?.returns ?? 0,
                              credited: ledger[id]?.credited ?? 0, revoked: ledger[id]?.revoked ?? 0)
        }
    }

    static func alert(_ day: ReportDay, _ p: ReconciledProduct) -> NewAlert {
        NewAlert(kind: .reconciliationGap, productID: p.productID, reason: reason(day, p),
                 details: ["product": p.productID, "day": day.description, "apple_units": String(p.appleUnits),
                           "apple_returns": String(p.appleReturns), "credited": String(p.credited),
                           "revoked": String(p.revoked), "difference": String(p.gap), "returns_difference": String(p.returnsGap)])
    }

    /// Each way the product-day disagrees, in words.
    static func reason(_ day: ReportDay, _ p: ReconciledProduct) -> String {
        var parts: [String] = []
        if p.gap > 0 { parts.append("Apple sold \(p.gap) more unit(s) of \(p.productID) on \(day) than the ledger credited") }
        if p.gap < 0 && p.appleUnits == 0 {
            parts.append("the ledger credited \(p.credited) unit(s) of \(p.productID) on \(day) but Apple sold none")
        } else if p.gap < 0 {
            parts.append("the ledger credited \(-p.gap) unit(s) of \(p.productID) on \(day) that Apple's sales report does not show")
        }
        if p.returnsGap != 0 {
            parts.append("Apple counted \(p.appleReturns) return(s) of \(p.productID) on \(day); the ledger revoked \(p.revoked)")
        }
        return parts.joined(separator: "; ")
    }
}

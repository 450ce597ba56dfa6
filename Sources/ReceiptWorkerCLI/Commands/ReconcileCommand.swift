import AppStore
import Foundation
import Observability
import Postgres
import Reconciliation
import Settlement

/// `reconcile --date YYYY-MM-DD [--json]`: one Pacific day of Apple's sales summary against the ledger.
/// Parses and wires only; the work is `Reconciler`'s.
enum ReconcileCommand {
    static let spec = CommandSpec(
        name: "reconcile",
        summary: "reconcile --date YYYY-MM-DD [--json]: compares Apple's daily sales summary (Pacific day) with the ledger per in-app product; records the day, raises or resolves reconciliation_gap alerts.",
        usage: "reconcile --date YYYY-MM-DD [--json]",
        // The App Store Server API settings are optional: with them, a shortfall's buyers get their histories pulled.
        settings: Settings.database + Settings.appStoreConnect
            + [Settings.bundleID, Settings.appStoreAPIURL, Settings.appStoreAPISandboxURL, Settings.issuerID, Settings.keyID,
               Settings.privateKeyFile, Settings.appStoreRatePerSecond, Settings.appStoreRatePerHour] + Settings.logging,
        flags: [
            CommandFlag(name: "date", takesValue: true, help: "the Pacific-time reporting day, YYYY-MM-DD"),
            CommandFlag(name: "json", takesValue: false, help: "print the day as JSON (day, available, products) instead of a table"),
        ],
        positionals: 0...0)

    static func run(_ runtime: Runtime) async throws -> Int32 {
        // --json: stdout carries the JSON document alone, so log lines (alerts included) go to stderr.
        let json = runtime.options.has("json")
        let runtime = json ? Runtime(options: runtime.options, environment: runtime.environment, logSink: StandardErrorSink()) : runtime
        guard let text = runtime.options.flag("date"), let day = ReportDay(text) else {
            throw UsageError("reconcile needs --date YYYY-MM-DD (a Pacific-time reporting day)")
        }
        let reports = try SalesReportAccess.client(runtime.options)
        let client = try await runtime.connectDatabase(maxConnections: 1, applicationName: "receipt-worker-reconcile")
        // Logged and stored; the workers' alert repeat takes open alerts to the webhook.
        let alerts = AlertRecorder(logger: runtime.logger, metrics: SettlementMetrics(registry: MetricsRegistry()), webhook: nil)
        let result: ReconciliationResult
        do {
            let recovery = try recovery(runtime, client: client)
            result = try await Reconciler(client: client, reports: reports, alerts: alerts, logger: runtime.logger, recovery: recovery)
                .reconcile(day)
            await client.close()
        } catch let error as ReconciliationError where error.apple.kind == .configError {
            await client.close()
            throw UsageError("reconcile \(day): \(error)")  // credentials: exit 2, like any configuration error
        } catch {
            await client.close()
            throw error
        }
        Console.print(json ? result.json : table(result))
        return 0
    }

    /// History pulls need the App Store Server API; without its credentials gaps are only reported and alerted.
    private static func recovery(_ runtime: Runtime, client: PostgresClient) throws -> GapRecovery? {
        guard let bundleID = runtime.options.string(Settings.bundleID) else { return nil }
        let registry = MetricsRegistry()
        guard let api = try SettlementWiring.serverAPIClient(
            runtime.options, bundleID: bundleID, observer: AppleRequestMetrics(registry: registry, logger: runtime.logger),
            limiter: PostgresRateLimiter(client: client, limit: SettlementWiring.rateLimit(runtime.options))) else { return nil }
        // On demand, the day's undelivered notifications are pulled too (the leader's periodic pull already covers recent days).
        return GapRecovery(client: client, api: api, logger: runtime.logger,
                           notifications: NotificationHistoryPuller(client: client, api: api, metrics: SettlementMetrics(registry: registry),
                                                                    logger: runtime.logger))
    }

    static func table(_ result: ReconciliationResult) -> String {
        guard result.available else { return "reconcile \(result.day): Apple's report is not yet available; try again later" }
        let rows = result.products.map { p in
            [p.productID, String(p.appleUnits), String(p.appleReturns), String(p.credited), String(p.revoked), String(p.gap)]
        }
        let summary = (result.noSales ? "Apple published no report (no sales that day); " : "")
            + (result.gaps.isEmpty ? "reconciled: every product matches"
                : "\(result.gaps.count) product(s) with a gap; \(result.alertsRaised) alert(s) opened")
        let recovered = result.recovered.sorted { $0.key < $1.key }.map { product, c in
            "\n\(product): \(c.buyers) buyer(s)' histories pulled (\(c.unreachable) without a known transaction, \(c.historyFailures) failed); "
                + "\(c.enqueued) missing transaction(s) handed to the queue"
        }
        let notifications = result.notificationsEnqueued.map { "\nGet Notification History for the day: \($0) undelivered notification(s) handed to the queue" } ?? ""
        return "reconcile \(result.day) (Pacific): \(summary); \(result.alertsResolved) alert(s) resolved\n"
            + TextTable.render(header: ["product", "apple_units", "apple_returns", "credited", "revoked", "gap"], rows: rows)
            + recovered.joined() + notifications
    }
}

import AppStore
import Foundation
import HTTP
import Observability
import Postgres
import Queue
import Settlement

/// Builds the Apple verifier, settlement and alerting from the checked settings.
struct SettlementWiring: Sendable {
    let handler: AppleJobHandler
    let alerts: AlertRecorder
    let webhook: AlertWebhook?
    let metrics: SettlementMetrics
    let runtime: Runtime

    init(runtime: Runtime, registry: MetricsRegistry, maxAttempts: Int) throws {
        let options = runtime.options
        guard let bundleID = options.string(Settings.bundleID) else {
            throw UsageError("APPLE_BUNDLE_ID is not set (or pass --bundle-id): receipts are checked against it")
        }
        let secret = try options.secret(Settings.sharedSecret, file: Settings.sharedSecretFile)
        let configuration = ReceiptVerifierConfiguration(
            productionURL: URL(string: try options.require(Settings.verifyReceiptURL))!,
            sandboxURL: URL(string: try options.require(Settings.verifyReceiptSandboxURL))!,
            sharedSecret: secret, allowSandbox: options.bool(Settings.allowSandbox), bundleID: bundleID,
            requestTimeout: options.duration(Settings.appleTimeout))
        let logger = runtime.logger
        let client: AppleReceiptClient
        do {
            client = try AppleReceiptClient(configuration: configuration, observer: AppleRequestMetrics(registry: registry, logger: logger))
        } catch {
            throw UsageError("\(error)")
        }
        let signedData: StoreKitSignedDataVerifier
        do {
            let roots = try StoreKitTrustedRoots.load(appleRootCerts: options.string(Settings.rootCerts))
            signedData = try StoreKitSignedDataVerifier(
                configuration: StoreKitVerifierConfiguration(bundleID: bundleID, appAppleID: options.string(Settings.appID).flatMap { Int64($0) },
                                                             allowSandbox: options.bool(Settings.allowSandbox)),
                trustedRoots: roots)
        } catch {
            throw UsageError("APPLE_ROOT_CERTS (--root-certs): \(error)")
        }
        metrics = SettlementMetrics(registry: registry)
        if let hook = options.string(Settings.alertWebhookURL), let url = URL(string: hook) {
            guard url.scheme == "https" || isLoopbackHost(url.host ?? "") else {
                throw UsageError("ALERT_WEBHOOK_URL (--alert-webhook-url) must be https (plain http only to a loopback address)")
            }
            webhook = AlertWebhook(url: url, transport: try RoutingHTTPTransport(plainHTTPLoopbackOnly: true), logger: logger)
        } else {
            webhook = nil
        }
        alerts = AlertRecorder(logger: logger, metrics: metrics, webhook: webhook)
        handler = AppleJobHandler(receipts: client, signedData: signedData, maxAttempts: maxAttempts, alerts: alerts,
                                  metrics: metrics, logger: logger)
        self.runtime = runtime
    }

    /// The leader's money duties beside the queue's own.
    func maintenance(client: PostgresClient) -> [any MaintenanceTask] {
        let options = runtime.options
        let stuckAfter = options.seconds(Settings.stuckAfter)
        let repeatAfter = options.seconds(Settings.alertRepeat)
        return [
            StuckDetector(client: client, interval: min(60, max(1, stuckAfter / 10)), stuckAfter: stuckAfter, alerts: alerts),
            AlertReemitter(client: client, interval: min(60, max(1, repeatAfter / 10)), repeatAfter: repeatAfter, alerts: alerts),
            JobRetention(client: client, interval: 600, retentionDays: options.seconds(Settings.retentionDays), logger: runtime.logger),
        ]
    }

    static func seconds(_ text: String) -> Double? {
        SettingValidator.parseSeconds(text).flatMap { $0 >= 0 ? $0 : nil }
    }
}

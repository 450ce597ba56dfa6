import AppStore
import Foundation
import HTTP
import Observability
import Postgres
import Queue
import Reconciliation
import Settlement
import StoreKitCrypto

/// Builds the Apple verifier, settlement and alerting from the checked settings.
struct SettlementWiring: Sendable {
    let handler: AppleJobHandler
    let alerts: AlertRecorder
    let webhook: AlertWebhook?
    let metrics: SettlementMetrics
    let runtime: Runtime
    /// App Store Server API (nil without credentials), behind the fleet limit in the database.
    let serverAPI: AppStoreServerAPIClient?
    /// Sales reports for the leader's daily reconciliation (nil without the APPSTORECONNECT_* settings).
    let salesReports: SalesReportClient?
    let registry: MetricsRegistry

    /// `concurrency`: the worker's verifications in flight, each holding a connection to Apple; as many are kept alive.
    init(runtime: Runtime, registry: MetricsRegistry, maxAttempts: Int, concurrency: Int, client: PostgresClient) throws {
        let options = runtime.options
        guard let bundleID = options.string(Settings.bundleID) else {
            throw UsageError("APPLE_BUNDLE_ID is not set (or pass --bundle-id): receipts are checked against it")
        }
        let secret = try options.secret(Settings.sharedSecret, file: Settings.sharedSecretFile)
        let configuration = ReceiptVerifierConfiguration(
            productionURL: URL(string: try options.require(Settings.verifyReceiptURL))!,
            sandboxURL: URL(string: try options.require(Settings.verifyReceiptSandboxURL))!,
            sharedSecret: secret, allowSandbox: options.bool(Settings.allowSandbox), bundleID: bundleID,
            requestTimeout: options.duration(Settings.appleTimeout), idleConnectionsPerHost: concurrency)
        let logger = runtime.logger
        let receipts: AppleReceiptClient
        do {
            receipts = try AppleReceiptClient(configuration: configuration, observer: AppleRequestMetrics(registry: registry, logger: logger))
        } catch {
            throw UsageError("\(error)")
        }
        let signedData = try Self.signedDataVerifier(options, bundleID: bundleID)
        let serverAPI = try Self.serverAPIClient(options, bundleID: bundleID, observer: AppleRequestMetrics(registry: registry, logger: logger),
                                                 limiter: PostgresRateLimiter(client: client, limit: Self.rateLimit(options)))
        self.serverAPI = serverAPI
        self.registry = registry
        let connect = [Settings.connectIssuerID, Settings.connectKeyID, Settings.connectPrivateKeyFile, Settings.connectVendorNumber]
        salesReports = connect.contains { options.string($0) != nil } ? try SalesReportAccess.client(options) : nil
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
        let consumption = ConsumptionResponder(client: client, api: serverAPI, refundPreference: Self.refundPreference(options),
                                               metrics: metrics)
        handler = AppleJobHandler(receipts: receipts, signedData: signedData, serverAPI: serverAPI, consumption: consumption,
                                  maxAttempts: maxAttempts, alerts: alerts, metrics: metrics, logger: logger)
        self.runtime = runtime
    }

    /// The App Store Server API client when its three credentials are set; all or none.
    static func serverAPIClient(_ options: CommandLineOptions, bundleID: String, observer: AppleRequestObserver,
                                limiter: AppStoreRateLimiter) throws -> AppStoreServerAPIClient? {
        let credentials = [Settings.issuerID, Settings.keyID, Settings.privateKeyFile]
        let given = credentials.filter { options.string($0) != nil }
        guard !given.isEmpty else { return nil }
        if let missing = credentials.first(where: { options.string($0) == nil }) {
            throw UsageError("\(missing.env) is not set (App Store Server API credentials are all three or none)")
        }
        let keyFile = try options.require(Settings.privateKeyFile)
        let key: ES256PrivateKey
        do {
            key = try ES256PrivateKey(pemFile: keyFile)
        } catch {
            throw UsageError("APPSTORE_PRIVATE_KEY_FILE (--private-key-file): not a readable EC P-256 private key (.p8)")
        }
        let configuration = AppStoreServerAPIConfiguration(
            productionURL: URL(string: try options.require(Settings.appStoreAPIURL))!,
            sandboxURL: URL(string: try options.require(Settings.appStoreAPISandboxURL))!,
            issuerID: try options.require(Settings.issuerID), keyID: try options.require(Settings.keyID), bundleID: bundleID,
            privateKey: key, requestTimeout: options.duration(Settings.appleTimeout))
        do {
            return try AppStoreServerAPIClient(configuration: configuration, observer: observer, limiter: limiter)
        } catch {
            throw UsageError("\(error)")
        }
    }

    /// StoreKit 2 verification with the configured roots (the bundled Apple Root CA - G3 by default).
    static func signedDataVerifier(_ options: CommandLineOptions, bundleID: String) throws -> StoreKitSignedDataVerifier {
        do {
            let roots = try StoreKitTrustedRoots.load(appleRootCerts: options.string(Settings.rootCerts))
            return try StoreKitSignedDataVerifier(
                configuration: StoreKitVerifierConfiguration(bundleID: bundleID, appAppleID: options.string(Settings.appID).flatMap { Int64($0) },
                                                             allowSandbox: options.bool(Settings.allowSandbox)),
                trustedRoots: roots)
        } catch {
            throw UsageError("APPLE_ROOT_CERTS (--root-certs): \(error)")
        }
    }

    static func rateLimit(_ options: CommandLineOptions) -> AppStoreRateLimit {
        AppStoreRateLimit(perSecond: Double(options.int(Settings.appStoreRatePerSecond)), perHour: options.int(Settings.appStoreRatePerHour))
    }

    static func refundPreference(_ options: CommandLineOptions) -> RefundPreference? {
        RefundPreference(rawValue: (options.string(Settings.refundPreference) ?? "none").uppercased())
    }

    /// The leader's money duties beside the queue's own.
    func maintenance(client: PostgresClient) -> [any MaintenanceTask] {
        let options = runtime.options
        let stuckAfter = options.seconds(Settings.stuckAfter)
        let repeatAfter = options.seconds(Settings.alertRepeat)
        let historyInterval = options.seconds(Settings.historyInterval)
        var history: [any MaintenanceTask] = []
        if let serverAPI, historyInterval > 0 {
            history.append(NotificationHistoryTask(puller: NotificationHistoryPuller(client: client, api: serverAPI, metrics: metrics,
                                                                                     logger: runtime.logger),
                                                   pullInterval: historyInterval))
        }
        if let salesReports {
            let reconciler = Reconciler(client: client, reports: salesReports, alerts: alerts, logger: runtime.logger,
                                        recovery: serverAPI.map { GapRecovery(client: client, api: $0, logger: runtime.logger, maxBuyers: 200) })
            history.append(ReconciliationTask(reconciler: reconciler, metrics: ReconciliationMetrics(registry: registry)))
        }
        return history + [
            StuckDetector(client: client, interval: min(60, max(1, stuckAfter / 10)), stuckAfter: stuckAfter, alerts: alerts),
            AlertReemitter(client: client, interval: min(60, max(1, repeatAfter / 10)), repeatAfter: repeatAfter, alerts: alerts),
            RefundApplier(client: client, interval: 10, metrics: metrics, logger: runtime.logger),
            JobRetention(client: client, interval: 600, retentionDays: options.seconds(Settings.retentionDays), logger: runtime.logger),
        ]
    }

    static func seconds(_ text: String) -> Double? {
        SettingValidator.parseSeconds(text).flatMap { $0 >= 0 ? $0 : nil }
    }
}

import AppStore
import AppleSim
import Foundation
import Observability
import Postgres
import Queue
import Settlement
import StoreKitCrypto
import TestSupport

/// How the fixture's worker reaches PostgreSQL: directly, or through PgBouncer in
/// transaction pooling mode with LISTEN direct, or through PgBouncer polling only.
enum DatabaseRoute: String, CaseIterable, Sendable {
    case direct, pgBouncer, pgBouncerPollOnly

    @TaskLocal static var current = DatabaseRoute.direct

    /// Runs `body` once per route (each with its own fixture), naming the route on failure.
    static func each(_ body: () async throws -> Void) async throws {
        for route in allCases {
            do {
                try await $current.withValue(route) { try await body() }
            } catch {
                throw RouteFailure(route: route, error: error)
            }
        }
    }
}

struct RouteNotTaken: Error { let route: DatabaseRoute }

struct RouteFailure: Error, CustomStringConvertible {
    let route: DatabaseRoute
    let error: Error
    var description: String { "through \(route.rawValue): \(error)" }
}

/// A real database, apple-sim over real HTTP on loopback, and a worker running the
/// Apple handler: purchases go in as the web tier would put them, outcomes come out.
final class SettlementFixture: Sendable {
    static let bundleID = "com.example.game"
    let url: String
    let client: PostgresClient
    let simulator: AppleSimulator
    let worker: QueueWorker
    let signedData: StoreKitSignedDataVerifier
    let logs = CapturingLogSink()
    let registry = MetricsRegistry()
    let metrics: SettlementMetrics
    /// The App Store Server API client (with `serverAPI: true`), behind the fleet limiter in the database.
    let api: AppStoreServerAPIClient?
    private let running: Task<Void, Never>

    init(allowSandbox: Bool = false, maxAttempts: Int = 4, sharedSecret: String = "shh-secret", serverAPI: Bool = false,
         appAppleID: Int64? = 4242, refundPreference: RefundPreference? = nil,
         rateLimit: AppStoreRateLimit = AppStoreRateLimit(perSecond: 1000, perHour: 1_000_000)) async throws {
        url = try await TestDatabase.fresh()
        let route = DatabaseRoute.current
        let bouncer = route == .direct ? nil : try await TestDatabase.pgBouncer(.transaction)
        client = PostgresClient(conninfo: bouncer?.url(replacingIn: url) ?? url, maxConnections: 4)
        if bouncer != nil, try await !client.withConnection({ $0.isBehindPooler }) { throw RouteNotTaken(route: route) }
        simulator = AppleSimulator(configuration: AppleSimConfiguration(sharedSecret: sharedSecret))
        _ = try simulator.start()
        let logger = Logger(minimumLevel: .debug, sink: logs, redactor: Redactor(secrets: [sharedSecret]))
        let metrics = SettlementMetrics(registry: registry)
        self.metrics = metrics
        let receipts = try AppleReceiptClient(configuration: ReceiptVerifierConfiguration(
            productionURL: simulator.productionURL, sandboxURL: simulator.sandboxURL, sharedSecret: sharedSecret,
            allowSandbox: allowSandbox, bundleID: Self.bundleID, requestTimeout: .seconds(5)))
        var configuration = QueueConfiguration()
        configuration.maxAttempts = maxAttempts
        configuration.retryPolicy = .schedule([0.05])
        configuration.pollInterval = 0.05
        configuration.listenForNotifications = route != .pgBouncerPollOnly
        signedData = try StoreKitSignedDataVerifier(
            configuration: StoreKitVerifierConfiguration(bundleID: Self.bundleID, appAppleID: appAppleID, allowSandbox: allowSandbox),
            trustedRoots: [simulator.serverAPI.signingChain.root])
        var apiClient: AppStoreServerAPIClient?
        if serverAPI {
            let keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("sim-key-\(UUID().uuidString).p8").path
            try simulator.serverAPI.writeAPIPrivateKey(to: keyFile)
            defer { try? FileManager.default.removeItem(atPath: keyFile) }
            apiClient = try AppStoreServerAPIClient(configuration: AppStoreServerAPIConfiguration(
                productionURL: simulator.baseURL, sandboxURL: simulator.baseURL.appendingPathComponent("sandbox"),
                issuerID: SimServerAPI.defaultIssuerID, keyID: SimServerAPI.defaultKeyID, bundleID: Self.bundleID,
                privateKey: try ES256PrivateKey(pemFile: keyFile)),
                observer: AppleRequestMetrics(registry: registry, logger: logger),
                limiter: PostgresRateLimiter(client: client, limit: rateLimit))
        }
        api = apiClient
        let consumption = ConsumptionResponder(client: client, api: apiClient, refundPreference: refundPreference, metrics: metrics)
        let handler = AppleJobHandler(receipts: receipts, signedData: signedData, serverAPI: apiClient, consumption: consumption,
                                      maxAttempts: maxAttempts,
                                      alerts: AlertRecorder(logger: logger, metrics: metrics, webhook: nil), metrics: metrics, logger: logger)
        let worker = QueueWorker(store: QueueStore(client: client), handler: handler, configuration: configuration,
                                 logger: logger, metrics: QueueMetrics(registry: registry), listenerConninfo: url)
        self.worker = worker
        running = Task { await worker.run() }
    }

    func stop() async {
        worker.shutdown()
        await running.value
        await simulator.shutdown()
        await client.close()
    }

    func order(_ id: String, user: String, product: String, token: UUID? = nil) async throws {
        _ = try await client.query("INSERT INTO iap.orders (order_id, user_id, product_id, app_account_token) VALUES ($1, $2, $3, $4)",
                                   [id, user, product, token])
    }

    func receipt(_ transactions: [SimReceipt.Transaction], environment: AppleEnvironment = .production,
                 bundle: String = SettlementFixture.bundleID, status: Int? = nil) -> String {
        SimReceipt(bundleID: bundle, environment: environment, transactions: transactions, forceStatus: status).mint()
    }

    func enqueue(user: String, order: String?, receipt: String) async throws -> Int {
        try await client.query("SELECT iap.enqueue_receipt($1, $2, $3)", [user, order, receipt])[0].decode(Int.self, at: 0)
    }

    struct Finished: Sendable {
        let state: String
        let outcome: String
        let transactionIDs: [String]
        let lastError: String?
    }

    /// Waits for a job to reach a terminal state.
    func finished(_ job: Int, within seconds: Double = 30) async throws -> Finished {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            let row = try await client.query("SELECT state, outcome, transaction_ids, last_error FROM iap.jobs WHERE id = $1", [job])[0]
            let state: String = try row.decode(at: 0)
            if ["done", "failed", "attention"].contains(state) {
                return Finished(state: state, outcome: try row.decode(at: 1), transactionIDs: try row.decode(at: 2), lastError: try row.decode(at: 3))
            }
            try await Task.sleep(for: .milliseconds(30))
        }
        let row = try await client.query("SELECT state, last_error FROM iap.jobs WHERE id = $1", [job])[0]
        throw SettlementFixtureTimeout(job: job, state: try row.decode(at: 0), lastError: try row.decode(at: 1))
    }

    func ledger() async throws -> [String: String] {
        var rows: [String: String] = [:]
        for row in try await client.query("SELECT transaction_id, order_id FROM iap.credits") {
            rows[try row.decode(at: 0)] = try row.decode(at: 1)
        }
        return rows
    }

    func orderStatus(_ id: String) async throws -> String {
        try await client.query("SELECT status FROM iap.orders WHERE order_id = $1", [id])[0].decode(at: 0)
    }

    func openAlerts(_ kind: String) async throws -> [(id: Int, transaction: String?, reason: String)] {
        try await client.query("SELECT id, transaction_id, reason FROM iap.alerts WHERE kind = $1 AND state = 'open' ORDER BY id", [kind])
            .map { (try $0.decode(at: 0), try $0.decode(at: 1), try $0.decode(at: 2)) }
    }
}

struct SettlementFixtureTimeout: Error {
    let job: Int
    let state: String
    let lastError: String?
}

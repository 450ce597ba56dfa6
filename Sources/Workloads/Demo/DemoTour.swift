import HTTP
import AppStore
import AppleSim
import Foundation
import Observability
import Postgres
import Queue
import Settlement

/// The sample: one buyer per story from the field, each with the outcome it must reach.
public struct DemoTour: Sendable {
    let client: PostgresClient
    let url: String
    let logger: Logger
    /// Worker log lines on the terminal (LOG_LEVEL=debug); otherwise only errors.
    let verbose: Bool

    public init(client: PostgresClient, url: String, logger: Logger, verbose: Bool) {
        self.client = client
        self.url = url
        self.logger = logger
        self.verbose = verbose
    }
    static let bundleID = "com.example.coins"
    static let appAppleID: Int64 = 1_234_567_890

    struct Case {
        enum Kind { case receipt, signedTransaction, notification }
        let story: String
        let user: String
        let order: String?
        let receipt: String
        let expected: String
        var kind = Kind.receipt
    }

    /// Runs every story; true when each reached its expected outcome.
    public func run() async throws -> Bool {
        // Apple (simulated) is down for the first 1.5 s: the first attempts retry.
        let simulator = AppleSimulator(configuration: AppleSimConfiguration(
            sharedSecret: "demo-shared-secret", faults: AppleSimFaults(latency: SimLatency(min: .milliseconds(20), max: .milliseconds(120)),
                                                                     outage: SimOutage(start: .zero, duration: .milliseconds(1500)))))
        _ = try simulator.start()
        let logger = logger.withMinimumLevel(verbose ? .debug : .error)
        let registry = MetricsRegistry()
        let metrics = SettlementMetrics(registry: registry)
        let alerts = AlertRecorder(logger: logger, metrics: metrics, webhook: nil)
        let receipts = try AppleReceiptClient(configuration: ReceiptVerifierConfiguration(
            productionURL: simulator.productionURL, sandboxURL: simulator.sandboxURL, sharedSecret: "demo-shared-secret",
            allowSandbox: false, bundleID: Self.bundleID, requestTimeout: .seconds(5)))
        var configuration = QueueConfiguration()
        configuration.maxAttempts = 4
        configuration.retryPolicy = .schedule([0.4, 0.8, 1.2])
        configuration.pollInterval = 0.2
        let worker = QueueWorker(store: QueueStore(client: client),
                                 handler: AppleJobHandler(receipts: receipts, signedData: try StoreKitSignedDataVerifier(
                                     configuration: StoreKitVerifierConfiguration(bundleID: Self.bundleID, appAppleID: Self.appAppleID),
                                     trustedRoots: [simulator.serverAPI.signingChain.root]),
                                     maxAttempts: 4, alerts: alerts, metrics: metrics, logger: logger),
                                 configuration: configuration, logger: logger, metrics: QueueMetrics(registry: registry),
                                 listenerConninfo: url)
        let running = Task { await worker.run() }

        Console.print("receipt-worker demo: apple-sim on port \(simulator.port) (down for the first 1.5 s), private PostgreSQL, one worker\n")
        let firstWave = try await sampleCases() + storeKitCases(simulator.serverAPI.signingChain)
        var jobs = try await enqueue(firstWave)
        try await waitForJobs(Array(jobs.values))
        // 刷单: the same valid receipt re-sent by another account against a new order.
        let replay = [Case(story: "replay: alice's receipt re-sent by dave", user: "dave", order: "order-dave-1",
                           receipt: firstWave[0].receipt, expected: "replayed")]
        try await createOrders([("order-dave-1", "dave", "coins_100")])
        jobs.merge(try await enqueue(replay)) { $1 }
        try await waitForJobs(Array(jobs.values))
        Console.endProgress()
        worker.shutdown()
        await running.value
        await simulator.shutdown()

        let passed = try await printOutcomes(firstWave + replay, jobs: jobs)
        let recovered = try await DemoRecoveryStories(logger: self.logger, client: client, url: url).run()
        return passed && recovered
    }

    private func sampleCases() async throws -> [Case] {
        try await createOrders([
            ("order-alice-1", "alice", "coins_100"), ("order-bob-1", "bob", "coins_100"), ("order-bob-2", "bob", "gems_50"),
            ("order-carol-1", "carol", "coins_500"), ("order-erin-1", "erin", "coins_100"), ("order-gina-1", "gina", "coins_100"),
            ("order-hank-1", "hank", "coins_100"), ("order-ivy-1", "ivy", "coins_100"),
        ])
        func receipt(_ transactions: [SimReceipt.Transaction], environment: AppleEnvironment = .production, status: Int? = nil) -> String {
            SimReceipt(bundleID: Self.bundleID, environment: environment, transactions: transactions, forceStatus: status).mint()
        }
        return [
            Case(story: "valid purchase", user: "alice", order: "order-alice-1",
                 receipt: receipt([.init(transactionID: "1000001", productID: "coins_100")]), expected: "credited"),
            Case(story: "merged payment: two products, one receipt", user: "bob", order: "order-bob-1",
                 receipt: receipt([.init(transactionID: "1000002", productID: "coins_100"),
                                   .init(transactionID: "1000003", productID: "gems_50")]), expected: "credited"),
            Case(story: "order id lost on the device", user: "carol", order: nil,
                 receipt: receipt([.init(transactionID: "1000004", productID: "coins_500")]), expected: "credited"),
            Case(story: "sandbox receipt in production", user: "erin", order: "order-erin-1",
                 receipt: receipt([.init(transactionID: "2000001", productID: "coins_100")], environment: .sandbox), expected: "sandbox_rejected"),
            Case(story: "not a receipt at all", user: "gina", order: "order-gina-1",
                 receipt: Data("forged".utf8).base64EncodedString(), expected: "invalid_receipt"),
            Case(story: "paid, but no order on our side", user: "frank", order: nil,
                 receipt: receipt([.init(transactionID: "1000005", productID: "coins_100")]), expected: "paid_not_credited"),
            Case(story: "refunded before we saw it", user: "hank", order: "order-hank-1",
                 receipt: receipt([.init(transactionID: "1000006", productID: "coins_100",
                                         cancellationDateMs: SimReceipt.nowMilliseconds(), cancellationReason: "0")]), expected: "refunded"),
            Case(story: "wrong shared secret configured (21004)", user: "ivy", order: "order-ivy-1",
                 receipt: receipt([.init(transactionID: "1000007", productID: "coins_100")], status: 21004), expected: "config_error"),
        ]
    }

    /// StoreKit 2: a signed transaction from the app, and Apple's own ONE_TIME_CHARGE
    /// notification for a buyer whose app never uploaded anything.
    private func storeKitCases(_ chain: SimSigningChain) async throws -> [Case] {
        let kimToken = UUID(), leoToken = UUID()
        try await createOrders([("order-kim-1", "kim", "coins_100", kimToken), ("order-leo-1", "leo", "gems_50", leoToken)])
        func payload(_ id: String, _ product: String, _ token: UUID) -> JWSTransactionPayload {
            JWSTransactionPayload(transactionId: id, originalTransactionId: id, bundleId: Self.bundleID, productId: product,
                                  purchaseDate: Date(), signedDate: Date(), appAccountToken: token.uuidString, environment: "Production")
        }
        return [
            Case(story: "StoreKit 2 signed transaction", user: "kim", order: nil,
                 receipt: try chain.signTransaction(payload("3000001", "coins_100", kimToken)), expected: "credited",
                 kind: .signedTransaction),
            Case(story: "Apple's notification, the app never uploaded", user: "leo", order: nil,
                 receipt: try chain.signNotification(type: "ONE_TIME_CHARGE", transaction: payload("3000002", "gems_50", leoToken),
                                                     bundleID: Self.bundleID, appAppleID: Self.appAppleID, environment: .production),
                 expected: "credited", kind: .notification),
        ]
    }

    private func createOrders(_ orders: [(String, String, String)]) async throws {
        try await createOrders(orders.map { ($0.0, $0.1, $0.2, nil) })
    }

    private func createOrders(_ orders: [(String, String, String, UUID?)]) async throws {
        for (order, user, product, token) in orders {
            _ = try await client.query("""
                INSERT INTO iap.orders (order_id, user_id, product_id, app_account_token) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING
                """, [order, user, product, token])
        }
    }

    private func enqueue(_ cases: [Case]) async throws -> [String: Int] {
        var jobs: [String: Int] = [:]
        for item in cases {
            let rows: PostgresRows
            switch item.kind {
            case .receipt: rows = try await client.query("SELECT iap.enqueue_receipt($1, $2, $3)", [item.user, item.order, item.receipt])
            case .signedTransaction:
                rows = try await client.query("SELECT iap.enqueue_transaction($1, $2, $3)", [item.user, item.order, item.receipt])
            case .notification: rows = try await client.query("SELECT iap.enqueue_notification($1)", [item.receipt])
            }
            jobs[item.story] = try rows[0].decode(Int.self, at: 0)
        }
        return jobs
    }

    private func waitForJobs(_ ids: [Int]) async throws {
        let started = ContinuousClock.now
        while ContinuousClock.now - started < .seconds(60) {
            let row = try await client.query("""
                SELECT count(*) FILTER (WHERE state IN ('done', 'failed', 'attention')),
                       count(*) FILTER (WHERE state = 'retrying'), count(*) FILTER (WHERE state = 'running'),
                       (SELECT count(*) FROM iap.credits), (SELECT count(*) FROM iap.alerts WHERE state = 'open')
                FROM iap.jobs WHERE id = ANY($1::bigint[])
                """, [ids])[0]
            let finished: Int = try row.decode(at: 0)
            Console.progress("jobs finished \(finished)/\(ids.count)  retrying \(try row.decode(Int.self, at: 1))  "
                             + "verifying \(try row.decode(Int.self, at: 2))  ledger rows \(try row.decode(Int.self, at: 3))  "
                             + "open alerts \(try row.decode(Int.self, at: 4))")
            if finished == ids.count { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw WorkloadError("demo: jobs did not finish within 60 s")
    }

    private func printOutcomes(_ cases: [Case], jobs: [String: Int]) async throws -> Bool {
        var rows: [[String]] = []
        var passed = true
        for item in cases {
            guard let id = jobs[item.story] else { continue }
            let row = try await client.query("SELECT state, coalesce(outcome, '-'), attempts FROM iap.jobs WHERE id = $1", [id])[0]
            let outcome: String = try row.decode(at: 1)
            let ok = outcome == item.expected
            passed = passed && ok
            rows.append([ok ? "ok" : "MISMATCH", item.story, item.user, try row.decode(at: 0), outcome,
                         String(try row.decode(Int.self, at: 2))])
        }
        Console.print("\nOutcomes (check: the expected outcome was reached)\n"
                      + TextTable.render(header: ["check", "story", "user", "state", "outcome", "attempts"], rows: rows))
        return passed
    }
}

import AppStore
import AppleSim
import Foundation
import HTTP
import Observability
import Postgres
@testable import Reconciliation
@testable import Settlement
import TestSupport

/// A fresh database, apple-sim serving Sales and Trends reports over loopback, and a Reconciler between them.
struct ReconciliationHarness {
    let client: PostgresClient
    let sim: AppleSimulator
    let transport: SocketHTTPTransport
    let reconciler: Reconciler
    let logs: CapturingLogSink

    static func start() async throws -> ReconciliationHarness {
        let url = try await TestDatabase.fresh()
        let client = PostgresClient(conninfo: url, maxConnections: 2)
        let sim = AppleSimulator()
        try sim.start()
        let transport = try SocketHTTPTransport()
        let reports = try SalesReportClient.against(sim, transport: transport)
        let logs = CapturingLogSink()
        let logger = Logger(minimumLevel: .debug, sink: logs)
        let alerts = AlertRecorder(logger: logger, metrics: SettlementMetrics(registry: MetricsRegistry()), webhook: nil)
        return ReconciliationHarness(client: client, sim: sim, transport: transport,
                                     reconciler: Reconciler(client: client, reports: reports, alerts: alerts, logger: logger), logs: logs)
    }

    func stop() async {
        await client.close()
        await transport.shutdown()
        await sim.shutdown(grace: .seconds(1))
    }

    /// A ledger credit as the worker writes one (its order first).
    func credit(_ transactionID: String, product: String, purchasedAt: Date, revokedAt: Date? = nil,
                environment: String = "Production") async throws {
        _ = try await client.query("INSERT INTO iap.orders (order_id, user_id, product_id, status) VALUES ($1, 'u-1', $2, 'credited')",
                                   ["o-\(transactionID)", product])
        _ = try await client.query("""
            INSERT INTO iap.credits (transaction_id, order_id, user_id, product_id, quantity, environment, purchased_at, revoked_at)
            VALUES ($1, $2, 'u-1', $3, 1, $4, $5, $6)
            """, ["\(transactionID)", "o-\(transactionID)", product, environment, purchasedAt, revokedAt])
    }

    /// Open gap alerts: product → `details.difference`.
    func openGaps() async throws -> [String: String] {
        var gaps: [String: String] = [:]
        for row in try await client.query("""
            SELECT product_id, details ->> 'difference' FROM iap.alerts WHERE kind = 'reconciliation_gap' AND state = 'open'
            """) {
            gaps[try row.decode(String.self, at: 0)] = try row.decode(String.self, at: 1)
        }
        return gaps
    }

    /// The day's row in iap.reconciliation_checks: "status/no_sales", nil when the day was never checked.
    func outcome(_ day: ReportDay) async throws -> String? {
        try await client.query("SELECT status, no_sales FROM iap.reconciliation_checks WHERE day = $1::date", [day.description]).first
            .map { "\(try $0.decode(String.self, at: 0))/\(try $0.decode(Bool.self, at: 1))" }
    }
}

extension SalesReportClient {
    /// A client of apple-sim's Sales and Trends reports, with the simulator's own App Store Connect key.
    static func against(_ sim: AppleSimulator, transport: SocketHTTPTransport) throws -> SalesReportClient {
        try SalesReportClient(configuration: AppStoreConnectConfiguration(
            baseURL: sim.baseURL, issuerID: SimServerAPI.defaultIssuerID, keyID: SimServerAPI.defaultKeyID, vendorNumber: "85000001",
            privateKey: sim.serverAPI.apiPrivateKey, requestTimeout: .seconds(5)), transport: transport)
    }
}

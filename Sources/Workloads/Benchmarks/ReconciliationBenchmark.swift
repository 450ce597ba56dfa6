import AppStore
import AppleSim
import Foundation
import Observability
import Postgres
import Reconciliation
import Settlement

/// `bench reconcile`: one Pacific day of `--jobs` purchases (default 1,000,000) over 20 products and
/// 50 countries, and the 9 days before it at the same rate (the day is a tenth of the ledger, as in
/// any ledger with history; a day that were half the table would rightly be read by a sequential scan): how long the day takes to reconcile (gunzip
/// and parse Apple's summary, aggregate the ledger, record the day), and the aggregation's plan.
public struct ReconciliationBenchmark: Sendable {
    let context: BenchContext

    public init(context: BenchContext) { self.context = context }

    static let products = 20, countries = 50

    public func run() async throws -> Int32 {
        let purchases = context.number("jobs", default: 1_000_000)
        return try await context.withDatabase { url, _ in
            // Loading 10,000,000 ledger rows and vacuuming them takes longer than any call deadline.
            var configuration = PostgresConfiguration(conninfo: url, applicationName: "receipt-worker-bench")
            configuration.callTimeout = .infinity
            let client = PostgresClient(configuration: configuration, maxConnections: 2)
            try await context.migrate(client)
            let day = ReportDay(containing: ReportDay(containing: Date()).start.addingTimeInterval(-1))
            let loading = ContinuousClock.now
            try await load(client, day: day, purchases: purchases)
            let loadSeconds = (ContinuousClock.now - loading).seconds

            let report = try Gzip.compress(Array(Self.reportText(day: day, purchases: purchases).utf8))
            let parsing = ContinuousClock.now
            let parsed = try SalesSummaryReport.parse(String(decoding: try Gzip.decompress(report), as: UTF8.self), day: day)
            let parseSeconds = (ContinuousClock.now - parsing).seconds

            let plan = try await client.withConnection { connection in
                try await connection.pipeline([Reconciler.ledgerStatement(day).explained()])[0].map { try $0.decode(String.self, at: 0) }
            }.joined(separator: "\n")
            let reconciler = Reconciler(client: client, reports: StaticReportSource(gzip: report),
                                        alerts: AlertRecorder(logger: context.logger, metrics: SettlementMetrics(registry: MetricsRegistry()), webhook: nil),
                                        logger: context.logger.withMinimumLevel(.warning))
            let started = ContinuousClock.now
            let result = try await reconciler.reconcile(day)
            let seconds = (ContinuousClock.now - started).seconds
            BenchReport.line("reconcile", "day", [
                ("purchases", "\(purchases)"), ("report_rows", "\(parsed.rows.count)"), ("report_gzip_bytes", "\(report.count)"),
                ("parse_s", BenchReport.figure(parseSeconds)), ("reconcile_s", BenchReport.figure(seconds)),
                ("gaps", "\(result.gaps.count)"), ("index_backed", "\(!plan.contains("Seq Scan"))"),
                ("load_s", BenchReport.figure(loadSeconds)), ("target", "gaps=0 index_backed=true"),
            ])
            if plan.contains("Seq Scan") { context.logger.warning("bench_reconcile_plan", ["plan": .string(plan)]) }
            await client.close()
            return result.gaps.isEmpty && !plan.contains("Seq Scan") ? 0 : 1
        }
    }

    /// The day's purchases spread over its hours, products and countries; 9 times as many over the 9 days before.
    private func load(_ client: PostgresClient, day: ReportDay, purchases: Int) async throws {
        let seconds = day.end.timeIntervalSince(day.start)
        for (label, count, start, span) in [("d", purchases, day.start, seconds),
                                            ("p", purchases * 9, day.start.addingTimeInterval(-9 * 86_400), 9 * 86_400)] {
            _ = try await client.query("""
                INSERT INTO iap.orders (order_id, user_id, product_id, status)
                SELECT $1 || n, 'u' || (n % 100000), 'product_' || (n % \(Self.products)), 'credited' FROM generate_series(1, $2) AS n
                """, [label, count])
            _ = try await client.query("""
                INSERT INTO iap.credits (transaction_id, order_id, user_id, product_id, quantity, environment, purchased_at)
                SELECT $1 || n, $1 || n, 'u' || (n % 100000), 'product_' || (n % \(Self.products)), 1, 'Production',
                       $3::timestamptz + (n::float8 / $2 * $4) * interval '1 second'
                FROM generate_series(1, $2) AS n
                """, [label, count, start, span * 0.999])
        }
        // The visibility map lets the aggregation read the index alone, as on a ledger autovacuum has seen.
        try await client.withConnection { try await $0.execute(script: "VACUUM ANALYZE iap.credits") }
    }

    /// Apple's summary of those purchases: one row per product and country.
    static func reportText(day: ReportDay, purchases: Int) -> String {
        var lines: [SimSalesReportText.Line] = []
        for product in 0..<products {
            let units = purchases / products + (product < purchases % products ? 1 : 0)
            for country in 0..<countries {
                let share = units / countries + (country < units % countries ? 1 : 0)
                if share > 0 { lines.append(.init(productID: "product_\(product)", units: share, countryCode: "C\(country)")) }
            }
        }
        return SimSalesReportText.text(lines, day: day)
    }
}

/// A report already downloaded (the benchmark times parsing and the ledger, not the network).
struct StaticReportSource: SalesReportSource {
    let gzip: [UInt8]

    func dailySummary(for day: ReportDay) async -> Result<SalesReportDownload, AppStoreAPIError> {
        do {
            let text = try Gzip.decompress(gzip)
            return .success(.available(try SalesSummaryReport.parse(String(decoding: text, as: UTF8.self), day: day)))
        } catch {
            return .failure(AppStoreAPIError(.rejected, reason: "bench_report", status: nil, detail: "\(error)"))
        }
    }
}

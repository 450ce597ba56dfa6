import Foundation
import HTTP
import Observability
import Postgres
import SupportConsole

/// `bench console`: every console page's p95 with 1,000,000 jobs, 200,000 ledger rows and
/// 50,000 alerts (`--jobs N` scales the jobs). Targets: each page p95 < 100 ms, the search by
/// transaction id or user < 20 ms. The workload and the probe live in SupportConsole.
public struct ConsoleBenchmark: Sendable {
    let context: BenchContext

    public init(context: BenchContext) { self.context = context }

    public func run() async throws -> Int32 {
        let jobs = context.number("jobs", default: 1_000_000)
        let workload = ConsoleWorkload(jobs: jobs, ledgerRows: jobs / 5, alerts: jobs / 20)
        guard context.cluster != nil else {
            throw WorkloadError("bench console fills tables with a million rows: it runs on the private cluster only (unset DATABASE_URL)")
        }
        return try await context.withDatabase { url, _ in
            let client = PostgresClient(conninfo: url, maxConnections: 4, applicationName: "receipt-worker-bench")
            let server = ConsoleServer(configuration: try ConsoleConfiguration(listen: "127.0.0.1:0"), client: client,
                                       registry: MetricsRegistry(), logger: context.logger.withMinimumLevel(.warning))
            do {
                try await context.migrate(client)
                let fillStart = ContinuousClock.now
                // Inserting a million jobs in one statement can take longer than a call deadline on a
                // slow minute: the fill has none; the pages keep theirs.
                var filling = PostgresConfiguration(conninfo: url, applicationName: "receipt-worker-bench-fill")
                filling.callTimeout = .infinity
                let filler = PostgresClient(configuration: filling, maxConnections: 1)
                do { try await workload.fill(filler) } catch { await filler.close(); throw error }
                await filler.close()
                BenchReport.line("console", "setup", ["jobs": "\(workload.jobs)", "ledger_rows": "\(workload.ledgerRows)",
                                 "alerts": "\(workload.alerts)", "fill_s": "\(fillStart.duration(to: .now).components.seconds)"])
                let port = try server.start()
                var met = true
                for figure in try await ConsoleLatencyProbe(client: client, workload: workload).run(port: port) {
                    let isSearch = figure.page == "jobs_search_user" || figure.page == "jobs_search_transaction"
                    let target = isSearch ? 20.0 : 100.0
                    let ok = figure.p95Milliseconds < target && figure.statuses == [200]
                    met = met && ok
                    BenchReport.line("console", figure.page, ["p50_ms": BenchReport.figure(figure.p50Milliseconds),
                                     "p95_ms": BenchReport.figure(figure.p95Milliseconds),
                                     "statuses": figure.statuses.sorted().map(String.init).joined(separator: ","),
                                     "target": "p95<\(Int(target))ms", "meets_target": ok ? "yes" : "NO"])
                }
                await server.shutdown(grace: .seconds(1))
                await client.close()
                return met ? 0 : 1
            } catch {
                await server.shutdown(grace: .seconds(1))
                await client.close()
                throw error
            }
        }
    }
}

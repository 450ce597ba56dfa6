import Foundation
import Observability
import Postgres
import Settlement
import Workloads

enum DemoCommand {
    static let spec = CommandSpec(
        name: "demo",
        summary: "The one-command tour: private PostgreSQL (unless DATABASE_URL is set), apple-sim with an outage, a mixed sample, workers, then the ledger and the alerts.",
        usage: "demo [--database-url URL] [--exit]",
        settings: Settings.database + [Settings.migrationsDir] + Settings.logging,
        flags: [CommandFlag(name: "exit", takesValue: false, help: "exit after the tour instead of keeping the support console up")])

    static func run(_ runtime: Runtime) async throws -> Int32 {
        let migrator = try MigrateCommand.loadMigrator(runtime)
        return try await EmbeddedDatabase.withDatabase(runtime) { url, _ in
            let client = PostgresClient(conninfo: url, maxConnections: 4, applicationName: "receipt-worker-demo")
            do {
                try await client.withConnection { _ = try await migrator.migrate($0) }
                let passed = try await DemoTour(client: client, url: url, logger: runtime.logger,
                                                verbose: runtime.options.string(Settings.logLevel) == "debug").run()
                try await printLedgerAndAlerts(client, logger: runtime.logger)
                try await DemoConsole.offer(runtime, client: client, databaseURL: url)
                await client.close()
                return passed ? 0 : 1
            } catch {
                await client.close()
                throw error
            }
        }
    }

    /// What support sees afterwards: the ledger, the alerts and the queue.
    static func printLedgerAndAlerts(_ client: PostgresClient, logger: Logger) async throws {
        let credits = try await client.query("""
            SELECT transaction_id, user_id, order_id, product_id, quantity::text, environment FROM iap.credits ORDER BY transaction_id
            """).map { row in try (0..<6).map { try row.decode(String.self, at: $0) } }
        Console.print("\nLedger (iap.credits: one row per Apple transaction, credited exactly once)\n"
                      + TextTable.render(header: ["transaction", "user", "order", "product", "qty", "environment"], rows: credits))
        let desk = SupportDesk(client: client, metrics: SettlementMetrics(registry: MetricsRegistry()), logger: logger)
        Console.print("\nAlerts (for support: receipt-worker alerts list | credit ID --order ORDER | resolve ID --note TEXT)\n"
                      + AlertListing.table(try await desk.list(openOnly: false)))
        Console.print("\n" + (try await StatusReport.load(client)).text())
    }
}

import Foundation
import Postgres

enum DemoCommand {
    static let spec = CommandSpec(
        name: "demo",
        summary: "The one-command tour: private PostgreSQL (unless DATABASE_URL is set), migrate, enqueue a mixed sample, show status.",
        usage: "demo [--database-url URL]",
        settings: Settings.database + [Settings.migrationsDir] + Settings.logging)

    static func run(_ runtime: Runtime) async throws -> Int32 {
        let migrator = try MigrateCommand.loadMigrator(runtime)
        return try await EmbeddedDatabase.withDatabase(runtime) { url, _ in
            let client = PostgresClient(conninfo: url, maxConnections: 2, applicationName: "receipt-worker-demo")
            do {
                try await client.withConnection { _ = try await migrator.migrate($0) }
                try await DemoSample.enqueue(client)
                Console.print(try await StatusReport.load(client).text())
            } catch {
                await client.close()
                throw error
            }
            await client.close()
            return 0
        }
    }
}

/// The demo's buyers and orders.
enum DemoSample {
    static func enqueue(_ client: PostgresClient) async throws {
        let orders: [(order: String, user: String, product: String)] = [
            ("demo-order-1", "alice", "coins_100"),
            ("demo-order-2", "bob", "coins_500"),
            ("demo-order-3", "carol", "coins_100"),
        ]
        for order in orders {
            _ = try await client.query(
                "INSERT INTO iap.orders (order_id, user_id, product_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
                order.order, order.user, order.product)
            let receipt = Data("demo receipt for \(order.order)".utf8).base64EncodedString()
            _ = try await client.query("SELECT iap.enqueue_receipt($1, $2, $3)", order.user, order.order, receipt)
        }
    }
}

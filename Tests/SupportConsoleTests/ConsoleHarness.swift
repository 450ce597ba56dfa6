import Foundation
import HTTP
import Observability
import Postgres
import SupportConsole
import TestSupport
import XCTest

/// A console on 127.0.0.1:0 over a fresh migrated database with a small story already in it.
final class ConsoleHarness: Sendable {
    /// Cheaper than production's scrypt cost so tests stay quick; the format and check are the same.
    static let testHasher = PasswordHasher(logN: 12, r: 8, p: 1)
    static let password = "correct horse battery staple"
    static let xssUser = "<img src=x onerror=alert(1)>"

    let url: String
    let client: PostgresClient
    let server: ConsoleServer
    let registry: MetricsRegistry
    let logs: CapturingLogSink
    let port: Int
    let fixture: ConsoleFixture

    init(configuration: ConsoleConfiguration? = nil, lookup: (any AppleOrderLookup)? = nil) async throws {
        url = try await TestDatabase.fresh()
        client = PostgresClient(conninfo: url, maxConnections: 4)
        registry = MetricsRegistry()
        logs = CapturingLogSink()
        let users = ConsoleUsers(client: client, hasher: Self.testHasher)
        try await users.add(name: "sam", role: .support, password: Self.password)
        try await users.add(name: "vera", role: .viewer, password: Self.password)
        fixture = try await ConsoleFixture.load(client)
        (lookup as? FakeOrderLookup)?.database.withLock { [client] in $0 = client }
        var configuration = try configuration ?? ConsoleConfiguration(listen: "127.0.0.1:0")
        configuration.passwordHasher = Self.testHasher  // no rehash of the test users to production cost at each sign-in
        server = ConsoleServer(configuration: configuration, client: client,
                               registry: registry, logger: Logger(minimumLevel: .debug, sink: logs), lookup: lookup)
        port = try server.start()
    }

    var baseURL: String { "http://127.0.0.1:\(port)" }

    func close() async {
        await server.shutdown(grace: .seconds(1))
        await client.close()
    }

    func scalar<T: PostgresDecodable>(_ sql: String, _ binds: [any PostgresEncodable] = []) async throws -> T {
        try await client.query(sql, binds)[0].decode(T.self, at: 0)
    }
}

/// The story every console test starts from: a buyer paid but was not credited (an alert to
/// credit), a second such alert to resolve, an alert for a hostile user id, and a credited buyer.
struct ConsoleFixture: Sendable {
    let paidNotCreditedAlert: Int
    let alertToResolve: Int
    let xssAlert: Int
    let attentionJob: Int
    let creditedJob: Int

    static func load(_ client: PostgresClient) async throws -> ConsoleFixture {
        _ = try await client.query("""
            INSERT INTO iap.orders (order_id, user_id, product_id, status) VALUES
                ('order-alice-1', 'alice', 'coins_100', 'open'), ('order-bob-1', 'bob', 'coins_100', 'credited'),
                ('order-carl-1', 'carl', 'gems_50', 'open')
            """)
        let attention = try await job(client, user: "alice", order: nil, state: "attention", outcome: "paid_not_credited",
                                      transactions: ["2000000000000001"], error: "no open order for coins_100")
        let credited = try await job(client, user: "bob", order: "order-bob-1", state: "done", outcome: "credited",
                                     transactions: ["2000000000000002"], error: nil)
        let carl = try await job(client, user: "carl", order: nil, state: "attention", outcome: "paid_not_credited",
                                 transactions: ["2000000000000003"], error: nil)
        let hostile = try await job(client, user: ConsoleHarness.xssUser, order: nil, state: "attention", outcome: "paid_not_credited",
                                    transactions: ["2000000000000004"], error: "<script>alert(2)</script>")
        _ = try await client.query("""
            INSERT INTO iap.credits (transaction_id, order_id, user_id, product_id, quantity, environment, job_id)
            VALUES ('2000000000000002', 'order-bob-1', 'bob', 'coins_100', 1, 'Production', $1)
            """, [credited])
        func alert(_ user: String, _ product: String, _ transaction: String, _ job: Int) async throws -> Int {
            try await client.query("""
                INSERT INTO iap.alerts (kind, transaction_id, job_id, user_id, product_id, reason, details)
                VALUES ('paid_not_credited', $1, $2, $3, $4, 'no_matching_order', '{"environment":"Production"}') RETURNING id
                """, [transaction, job, user, product])[0].decode(Int.self, at: 0)
        }
        return ConsoleFixture(
            paidNotCreditedAlert: try await alert("alice", "coins_100", "2000000000000001", attention),
            alertToResolve: try await alert("carl", "gems_50", "2000000000000003", carl),
            xssAlert: try await alert(ConsoleHarness.xssUser, "coins_100", "2000000000000004", hostile),
            attentionJob: attention, creditedJob: credited)
    }

    /// A job through the public enqueue function, then moved to its final state as the worker would leave it.
    static func job(_ client: PostgresClient, user: String, order: String?, state: String, outcome: String,
                    transactions: [String], error: String?) async throws -> Int {
        let id = try await client.query("SELECT iap.enqueue_receipt($1, $2, $3)", [user, order, "cmVjZWlwdC1" + transactions[0]])[0]
            .decode(Int.self, at: 0)
        _ = try await client.query("""
            UPDATE iap.jobs SET state = $2, outcome = $3, attempts = 2, apple_status = 0, transaction_ids = $4, last_error = $5,
                   finished_at = now() WHERE id = $1
            """, [id, state, outcome, transactions, error])
        return id
    }
}

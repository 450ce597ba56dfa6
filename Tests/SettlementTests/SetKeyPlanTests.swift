import Foundation
import Postgres
@testable import Queue
@testable import Settlement
import TestSupport
import XCTest

/// Lookups by a set of keys on tables that grow (ledger, orders, jobs) must not keep a
/// generic plan chosen while the table was empty: that plan is a sequential scan, kept until
/// autovacuum happens to analyze the table, and every batch would read the whole ledger.
/// Our sessions plan every execution for its actual parameters (plan_cache_mode), so each
/// statement below, prepared and run on an empty table, uses its index once the table is full.
final class SetKeyPlanTests: XCTestCase {
    struct Lookup {
        let table: String
        let sql: String
        let parameterTypes: String
        let arguments: String
        /// Arguments for the runs on the empty table, where `arguments` cannot succeed.
        var warmUpArguments: String? = nil
    }

    func testSetKeyLookupsUseTheirIndexAfterTheTableGrew() async throws {
        let url = try await TestDatabase.fresh()
        let connection = try await PostgresConnection.connect(url)
        let lookups = [
            Lookup(table: "iap.credits", sql: SettlementStore.ledgerSQL, parameterTypes: "text[]", arguments: "'{t-1,t-2}'"),
            Lookup(table: "iap.orders", sql: SettlementStore.ordersByIDSQL, parameterTypes: "text[]", arguments: "'{o-1,o-2}'"),
            Lookup(table: "iap.jobs", sql: QueueStore.lockOwnedSQL, parameterTypes: "bigint[], text", arguments: "'{1,2}', 'w'"),
            Lookup(table: "iap.jobs", sql: QueueStore.releaseSQL, parameterTypes: "bigint[], text", arguments: "'{1,2}', 'w'"),
            Lookup(table: "iap.jobs", sql: QueueStore.completeSQL,
                   parameterTypes: "bigint[], int[], text[], text[], float8[], int[], text[], jsonb, text",
                   arguments: "'{1,2}', '{1,1}', '{done}', '{credited}', '{NULL}', '{0}', '{NULL}', '{}', 'w'"),
            Lookup(table: "iap.orders", sql: SettlementStore.creditBatchSQL,
                   parameterTypes: "text[], text[], text[], text[], text[], int[], text[], timestamptz[], bigint[], text[]",
                   arguments: "'{x-1}', '{x-1}', '{o-1}', '{u-1}', '{coins}', '{1}', '{Production}', '{2026-01-01}', '{1}', '{worker}'",
                   warmUpArguments: Array(repeating: "'{}'", count: 10).joined(separator: ", ")),
        ]
        // Prepared and run while the tables are empty: more than the five runs after which
        // PostgreSQL would otherwise settle on a generic plan.
        for (index, lookup) in lookups.enumerated() {
            try await connection.execute(script: "PREPARE lookup\(index) (\(lookup.parameterTypes)) AS \(lookup.sql)")
            for _ in 0..<8 {
                try await connection.transaction { tx in
                    try await tx.execute(script: "EXECUTE lookup\(index)(\(lookup.warmUpArguments ?? lookup.arguments))")
                }
            }
        }
        // The tables grow; nobody analyzes them.
        try await grow(connection)
        for (index, lookup) in lookups.enumerated() {
            let plan = try await connection.transaction { tx in
                try await tx.query("EXPLAIN EXECUTE lookup\(index)(\(lookup.arguments))").map { try $0.decode(String.self, at: 0) }
            }.joined(separator: "\n")
            XCTAssertFalse(plan.contains("Seq Scan on \(lookup.table.split(separator: ".").last!)"), "\(lookup.sql)\n\(plan)")
            XCTAssertTrue(plan.contains("Index"), "\(lookup.sql)\n\(plan)")
        }
        // The statements our layer prepares itself are never run on a generic plan either
        // (a statement without parameters has only one plan, which PostgreSQL counts as generic).
        for _ in 0..<8 { _ = try await connection.query(SettlementStore.ledgerSQL, [["t-1"]]) }
        let generic = try await connection.query("""
            SELECT coalesce(sum(generic_plans), 0)::bigint FROM pg_prepared_statements WHERE cardinality(parameter_types) > 0
            """)[0].decode(Int.self, at: 0)
        XCTAssertEqual(generic, 0)
        await connection.close()
    }

    /// The worker's completion transaction (`planning: .reused`) keeps one plan per statement,
    /// and that plan, first made while the tables were empty, is still an index lookup after
    /// they grew: it was made with sequential scans priced out.
    func testReusedPlansMadeOnEmptyTablesStillUseTheirIndexAfterTheTablesGrew() async throws {
        let url = try await TestDatabase.fresh()
        let connection = try await PostgresConnection.connect(url)
        let lookups: [(table: String, statement: PostgresStatement, arguments: String)] = [
            ("credits", PostgresStatement(SettlementStore.ledgerSQL, [["t-1", "t-2"]]), "'{t-1,t-2}'"),
            ("orders", PostgresStatement(SettlementStore.ordersByIDSQL, [["o-1", "o-2"]]), "'{o-1,o-2}'"),
            ("job_queue", PostgresStatement(QueueStore.lockOwnedSQL, [[1, 2], "w"]), "'{1,2}', 'w'"),
        ]
        for _ in 0..<3 {
            for lookup in lookups {
                _ = try await connection.transaction(planning: .reused) { tx in try await tx.pipeline([lookup.statement]) }
            }
        }
        for lookup in lookups {
            let plans = try await connection.query("SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1",
                                                   [lookup.statement.sql])[0]
            XCTAssertEqual(try plans.decode(Int.self, at: 0), 3, "\(lookup.table): one generic plan, used by every run")
            XCTAssertEqual(try plans.decode(Int.self, at: 1), 0, lookup.table)
        }
        try await grow(connection)
        for lookup in lookups {
            let name = try await connection.query("SELECT name FROM pg_prepared_statements WHERE statement = $1",
                                                  [lookup.statement.sql])[0].decode(String.self, at: 0)
            let plan = try await connection.transaction(planning: .reused) { tx in
                try await tx.query("EXPLAIN EXECUTE \(name)(\(lookup.arguments))").map { try $0.decode(String.self, at: 0) }
            }.joined(separator: "\n")
            XCTAssertFalse(plan.contains("Seq Scan"), "\(lookup.table)\n\(plan)")
            XCTAssertTrue(plan.contains("Index"), "\(lookup.table)\n\(plan)")
        }
        await connection.close()
    }

    /// The tables grow by 30,000 rows each; nobody analyzes them.
    private func grow(_ connection: PostgresConnection) async throws {
        _ = try await connection.query("""
            INSERT INTO iap.orders (order_id, user_id, product_id) SELECT 'o-' || n, 'u-' || n, 'coins' FROM generate_series(1, 30000) AS n
            """)
        _ = try await connection.query("""
            INSERT INTO iap.credits (transaction_id, original_transaction_id, order_id, user_id, product_id, quantity, environment, purchased_at, job_id)
            SELECT 't-' || n, 't-' || n, 'o-' || n, 'u-' || n, 'coins', 1, 'Production', now(), n FROM generate_series(1, 30000) AS n
            """)
        try await connection.insertReceiptJobs(30000)
    }
}

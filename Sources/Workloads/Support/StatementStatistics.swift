import Postgres

/// Where PostgreSQL's time goes, statement by statement (pg_stat_statements; the benchmarks'
/// private cluster loads it). Every call degrades to nothing where the extension is missing.
struct StatementStatistics: Sendable {
    struct Entry: Sendable {
        /// The statement's name, or its first words.
        let label: String
        let calls: Int
        let rows: Int
        let milliseconds: Double
    }

    let client: PostgresClient

    /// Starts counting from zero; false where pg_stat_statements is not loaded.
    func reset() async -> Bool {
        do {
            _ = try await client.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            _ = try await client.query("SELECT pg_stat_statements_reset()")
            return true
        } catch {
            return false
        }
    }

    static let topSQL = """
        SELECT query, calls, rows, total_exec_time + total_plan_time FROM pg_stat_statements
        WHERE query NOT LIKE '%pg_stat_statements%' ORDER BY 4 DESC LIMIT $1
        """

    /// The statements that took most of the server's time since `reset`.
    func top(_ limit: Int) async -> [Entry] {
        guard let rows = try? await client.query(Self.topSQL, [limit]) else { return [] }
        return rows.compactMap { row in
            guard let query = try? row.decode(String.self, at: 0), let calls = try? row.decode(Int.self, at: 1),
                  let count = try? row.decode(Int.self, at: 2), let time = try? row.decode(Double.self, at: 3) else { return nil }
            return Entry(label: Self.label(query), calls: calls, rows: count, milliseconds: time)
        }
    }

    /// The hot statements end in a `-- receipt-worker: name` comment; others by their first words.
    static func label(_ query: String) -> String {
        if let range = query.range(of: "-- receipt-worker: ") {
            return String(query[range.upperBound...].prefix { $0 != "\n" })
        }
        let words = query.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" })
        // A CTE's name says little: name it by the statement it leads to.
        if words.first?.uppercased() == "WITH",
           let verb = words.firstIndex(where: { ["UPDATE", "INSERT", "DELETE"].contains($0.uppercased()) }) {
            return words[verb...].prefix(3).joined(separator: " ")
        }
        return words.prefix(4).joined(separator: " ")
    }
}

extension StatementStatistics {
    static let labelledTimeSQL = """
        SELECT sum(total_exec_time)::float8, sum(rows)::float8 FROM pg_stat_statements WHERE query LIKE '%-- receipt-worker: ' || $1 || '%'
        """

    /// Server time and rows returned of the statements labelled `label` since `reset`; nil
    /// without pg_stat_statements or before any call.
    func time(_ label: String) async -> (milliseconds: Double, rows: Double)? {
        guard let row = try? await client.query(Self.labelledTimeSQL, [label]).first,
              let time = try? row.decode(Double?.self, at: 0), let rows = try? row.decode(Double?.self, at: 1) else { return nil }
        return (time, rows)
    }
}

/// Tells whether a URL leads through a pooler in transaction (or statement) pooling mode,
/// where session state — an advisory lock held across statements, say — does not survive
/// from one transaction to the next.
public enum PoolingProbe {
    /// Direct connections are recognised at once (libpq's server process id is the server's
    /// own). Behind a pooler, two sessions open side by side ask the server for its process id
    /// in turn: in session pooling each keeps its own server connection, so the ids always
    /// differ; in transaction pooling a server connection just released is handed to the
    /// other client, so they meet.
    public static func isTransactionPooling(_ configuration: PostgresConfiguration, rounds: Int = 4) async throws -> Bool {
        let first = try await PostgresConnection.connect(configuration)
        guard first.isBehindPooler else {
            await first.close()
            return false
        }
        do {
            let second = try await PostgresConnection.connect(configuration)
            let met = try await sessionsMeet(first, second, rounds: rounds)
            await second.close()
            await first.close()
            return met
        } catch {
            await first.close()
            throw error
        }
    }

    private static func sessionsMeet(_ first: PostgresConnection, _ second: PostgresConnection, rounds: Int) async throws -> Bool {
        let sql = "SELECT pg_backend_pid()"
        for _ in 0..<rounds {
            let a = try await first.query(sql)[0].decode(Int.self, at: 0)
            let b = try await second.query(sql)[0].decode(Int.self, at: 0)
            if a == b { return true }
        }
        return false
    }
}

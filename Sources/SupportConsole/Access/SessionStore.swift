import Postgres

/// Cookie sessions in `iap.console_sessions`, so they survive a restart and work across
/// several console processes. The table keeps only SHA-256 of the cookie value.
struct SessionStore: Sendable {
    let client: PostgresClient
    let lifetimeSeconds: Double

    static let createSQL = """
        INSERT INTO iap.console_sessions (token_hash, user_name, csrf_token, expires_at)
        VALUES (sha256(convert_to($1, 'UTF8')), $2, $3, now() + make_interval(secs => $4))
        """
    static let findSQL = """
        SELECT s.user_name, u.role, s.csrf_token FROM iap.console_sessions s
        JOIN iap.console_users u ON u.name = s.user_name AND u.disabled_at IS NULL
        WHERE s.token_hash = sha256(convert_to($1, 'UTF8')) AND s.expires_at > now()
        """
    static let deleteSQL = "DELETE FROM iap.console_sessions WHERE token_hash = sha256(convert_to($1, 'UTF8'))"
    static let purgeSQL = "DELETE FROM iap.console_sessions WHERE expires_at < now()"

    /// A new session for `user`; returns the cookie value.
    func create(for userName: String) async throws -> String {
        let token = Hex.random(bytes: 32)
        _ = try await client.query(Self.purgeSQL)
        _ = try await client.query(Self.createSQL, [token, userName, Hex.random(bytes: 32), lifetimeSeconds])
        return token
    }

    func user(for token: String) async throws -> ConsoleUser? {
        guard token.utf8.count == 64, let row = try await client.query(Self.findSQL, [token]).first,
              let role = ConsoleRole(rawValue: try row.decode(String.self, at: 1)) else { return nil }
        return ConsoleUser(name: try row.decode(at: 0), role: role, csrfToken: try row.decode(at: 2))
    }

    func delete(_ token: String) async throws {
        _ = try await client.query(Self.deleteSQL, [token])
    }
}

import Postgres

/// Cookie sessions in `iap.console_sessions`, so they survive a restart and work across
/// several console processes. The table keeps only SHA-256 of the cookie value.
/// A session ends at its absolute expiry or after `idleSeconds` without a request, whichever
/// comes first; disabling the user or changing the password deletes it.
package struct SessionStore: Sendable {
    let client: PostgresClient
    let lifetimeSeconds: Double
    var idleSeconds: Double = 30 * 60

    package init(client: PostgresClient, lifetimeSeconds: Double, idleSeconds: Double = 30 * 60) {
        self.client = client
        self.lifetimeSeconds = lifetimeSeconds
        self.idleSeconds = idleSeconds
    }

    static let createSQL = """
        INSERT INTO iap.console_sessions (token_hash, user_name, csrf_token, expires_at)
        VALUES (sha256(convert_to($1, 'UTF8')), $2, $3, now() + make_interval(secs => $4))
        """
    /// Finding a live session is also its use: it stays alive for another idle spell.
    static let findSQL = """
        UPDATE iap.console_sessions s SET last_seen_at = now() FROM iap.console_users u
        WHERE u.name = s.user_name AND u.disabled_at IS NULL
          AND s.token_hash = sha256(convert_to($1, 'UTF8')) AND s.expires_at > now()
          AND s.last_seen_at > now() - make_interval(secs => $2)
        RETURNING s.user_name, u.role, s.csrf_token
        """
    static let deleteSQL = "DELETE FROM iap.console_sessions WHERE token_hash = sha256(convert_to($1, 'UTF8'))"
    static let purgeSQL = "DELETE FROM iap.console_sessions WHERE expires_at < now() OR last_seen_at < now() - make_interval(secs => $1)"

    /// A new session for `user`; returns the cookie value.
    package func create(for userName: String) async throws -> String {
        let token = Hex.random(bytes: 32)
        _ = try await client.query(Self.purgeSQL, [idleSeconds])
        _ = try await client.query(Self.createSQL, [token, userName, Hex.random(bytes: 32), lifetimeSeconds])
        return token
    }

    func user(for token: String) async throws -> ConsoleUser? {
        guard token.utf8.count == 64, let row = try await client.query(Self.findSQL, [token, idleSeconds]).first,
              let role = ConsoleRole(rawValue: try row.decode(String.self, at: 1)) else { return nil }
        return ConsoleUser(name: try row.decode(at: 0), role: role, csrfToken: try row.decode(at: 2))
    }

    func delete(_ token: String) async throws {
        _ = try await client.query(Self.deleteSQL, [token])
    }
}

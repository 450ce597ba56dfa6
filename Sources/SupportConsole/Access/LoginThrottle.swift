import Foundation
import Postgres

/// Sign-in attempts per user name and per client address, counted in PostgreSQL
/// (`iap.console_login_attempts`, migration 0017) so every console process shares them. An
/// attempt is reserved before the password is hashed: a hundred parallel guesses get the same
/// few tries as a hundred in a row. Past the free attempts, each further one waits a delay that
/// doubles up to a cap; refused attempts do not count, so an attacker can slow a named person's
/// sign-in by at most the cap, never lock them out.
public struct LoginThrottle: Sendable {
    public struct Limits: Sendable {
        public var perUser: Int
        public var perAddress: Int
        public var baseDelaySeconds: Double
        public var maxDelaySeconds: Double
        /// Attempts older than this are forgotten.
        public var windowSeconds: Double

        public init(perUser: Int = 5, perAddress: Int = 20, baseDelaySeconds: Double = 1, maxDelaySeconds: Double = 300,
                    windowSeconds: Double = 900) {
            self.perUser = perUser
            self.perAddress = perAddress
            self.baseDelaySeconds = baseDelaySeconds
            self.maxDelaySeconds = maxDelaySeconds
            self.windowSeconds = windowSeconds
        }
    }

    let client: PostgresClient
    let limits: Limits

    static let reserveSQL = "SELECT iap.console_login_reserve($1::text[], $2::integer[], $3::float8, $4::float8, $5::float8)"
    static let succeededSQL = "SELECT iap.console_login_succeeded($1, $2)"

    /// nil when this attempt may check a password (it is counted already); else the seconds to wait.
    func reserve(user: String, address: String) async throws -> Double? {
        let wait: Double = try await client.query(Self.reserveSQL, [
            [Self.userKey(user), Self.addressKey(address)], [limits.perUser, limits.perAddress],
            limits.baseDelaySeconds, limits.maxDelaySeconds, limits.windowSeconds,
        ])[0].decode(at: 0)
        return wait > 0 ? wait : nil
    }

    /// The password was right: the user's count starts again and the address gets its attempt back.
    func succeeded(user: String, address: String) async throws {
        _ = try await client.query(Self.succeededSQL, [Self.userKey(user), Self.addressKey(address)])
    }

    static func userKey(_ name: String) -> String { "user:" + name }
    static func addressKey(_ address: String) -> String { "address:" + address }
}

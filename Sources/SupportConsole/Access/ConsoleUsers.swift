import Foundation
import Postgres

public enum ConsoleUserError: Error, CustomStringConvertible, Equatable {
    case invalidName
    case passwordTooShort
    case alreadyExists(String)
    case noSuchUser(String)

    public var description: String {
        switch self {
        case .invalidName: "a console user name is 1-200 characters with no control characters"
        case .passwordTooShort: "a console password is at least \(ConsoleUsers.minimumPasswordLength) characters"
        case .alreadyExists(let name): "\(name) is already a console user (set-role and set-password change one)"
        case .noSuchUser(let name): "\(name) is not a console user"
        }
    }
}

/// One row of `console list-users`.
public struct ConsoleUserRecord: Sendable {
    public let name: String
    public let role: String
    public let hasPassword: Bool
    public let createdAt: Date
    public let disabledAt: Date?
}

/// `iap.console_users`: who may sign in, with which role.
public struct ConsoleUsers: Sendable {
    /// ASVS 2.1.1.
    public static let minimumPasswordLength = 12

    let client: PostgresClient
    let hasher: PasswordHasher

    public init(client: PostgresClient, hasher: PasswordHasher = .standard) {
        self.client = client
        self.hasher = hasher
    }

    static let insertSQL = """
        INSERT INTO iap.console_users (name, role, password_hash) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING RETURNING name
        """
    static let findSQL = "SELECT role, password_hash FROM iap.console_users WHERE name = $1 AND disabled_at IS NULL"
    /// A new password ends every session the old one opened (ASVS 3.3.3), in the same statement.
    static let setPasswordSQL = """
        WITH ended AS (DELETE FROM iap.console_sessions WHERE user_name = $1)
        UPDATE iap.console_users SET password_hash = $2 WHERE name = $1 RETURNING name
        """
    /// A one-time password is spent: cleared without ending the session it just opened; no row
    /// when a parallel sign-in spent it first.
    static let spendPasswordSQL = "UPDATE iap.console_users SET password_hash = NULL WHERE name = $1 AND password_hash IS NOT NULL RETURNING name"
    /// Rehash at sign-in: same password, stronger hash; only if nobody changed it meanwhile.
    static let rehashSQL = "UPDATE iap.console_users SET password_hash = $3 WHERE name = $1 AND password_hash = $2"
    static let setRoleSQL = "UPDATE iap.console_users SET role = $2 WHERE name = $1 RETURNING name"
    static let disableSQL = """
        WITH ended AS (DELETE FROM iap.console_sessions WHERE user_name = $1)
        UPDATE iap.console_users SET disabled_at = coalesce(disabled_at, now()) WHERE name = $1 RETURNING name
        """
    static let enableSQL = "UPDATE iap.console_users SET disabled_at = NULL WHERE name = $1 RETURNING name"
    static let listSQL = "SELECT name, role, password_hash IS NOT NULL, created_at, disabled_at FROM iap.console_users ORDER BY name"

    /// Adds a new user; an existing one is refused, never silently changed.
    public func add(name: String, role: ConsoleRole, password: String) async throws {
        try Self.check(name: name)
        let hash = try hashOf(password)
        guard try await !client.query(Self.insertSQL, [name, role.rawValue, hash]).isEmpty else { throw ConsoleUserError.alreadyExists(name) }
    }

    /// A new password; the user's sessions end.
    public func setPassword(name: String, password: String) async throws {
        try await expectOne(Self.setPasswordSQL, [name, try hashOf(password)], name)
    }

    /// Takes effect on the user's next request: sessions read the role every time.
    public func setRole(name: String, role: ConsoleRole) async throws {
        try await expectOne(Self.setRoleSQL, [name, role.rawValue], name)
    }

    /// The user can no longer sign in; their sessions end.
    public func disable(name: String) async throws {
        try await expectOne(Self.disableSQL, [name], name)
    }

    public func enable(name: String) async throws {
        try await expectOne(Self.enableSQL, [name], name)
    }

    public func list() async throws -> [ConsoleUserRecord] {
        try await client.query(Self.listSQL).map { row in
            ConsoleUserRecord(name: try row.decode(at: 0), role: try row.decode(at: 1), hasPassword: try row.decode(at: 2),
                              createdAt: try row.decode(at: 3), disabledAt: try row.decode(at: 4))
        }
    }

    /// The role when the password is right; nil otherwise (an unknown user costs the same time).
    /// scrypt runs on `hashing`; a hash cheaper than today's standard is replaced.
    func checkPassword(name: String, password: String, hashing: PasswordHashing) async throws -> ConsoleRole? {
        let hasher = self.hasher
        guard let row = try await client.query(Self.findSQL, [name]).first,
              let role = ConsoleRole(rawValue: try row.decode(String.self, at: 0)),
              let stored: String = try row.decode(at: 1) else {
            try await hashing.run { hasher.burnEquivalentWork(password) }
            return nil
        }
        guard try await hashing.run({ PasswordHasher.verify(password, against: stored) }) else { return nil }
        if hasher.isStronger(than: stored), let stronger = try await hashing.run({ try? hasher.hash(password) }) {
            _ = try await client.query(Self.rehashSQL, [name, stored, stronger])
        }
        return role
    }

    /// True when this sign-in spent the one-time password (false: someone else spent it first).
    func spendOneTimePassword(name: String) async throws -> Bool {
        !(try await client.query(Self.spendPasswordSQL, [name]).isEmpty)
    }

    /// The role of an enabled user (the SSO proxy vouched for who they are).
    func role(of name: String) async throws -> ConsoleRole? {
        guard let row = try await client.query(Self.findSQL, [name]).first else { return nil }
        return ConsoleRole(rawValue: try row.decode(String.self, at: 0))
    }

    private func hashOf(_ password: String) throws -> String {
        guard password.count >= Self.minimumPasswordLength else { throw ConsoleUserError.passwordTooShort }
        return try hasher.hash(password)
    }

    private func expectOne(_ sql: String, _ binds: [any PostgresEncodable], _ name: String) async throws {
        guard try await !client.query(sql, binds).isEmpty else { throw ConsoleUserError.noSuchUser(name) }
    }

    private static func check(name: String) throws {
        guard (1...200).contains(name.count), !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw ConsoleUserError.invalidName
        }
    }
}

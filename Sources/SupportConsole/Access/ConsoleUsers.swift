import Postgres

public enum ConsoleUserError: Error, CustomStringConvertible, Equatable {
    case invalidName
    case emptyPassword

    public var description: String {
        switch self {
        case .invalidName: "a console user name is 1-200 characters with no control characters"
        case .emptyPassword: "the password is empty"
        }
    }
}

/// `iap.console_users`: who may sign in, with which role.
public struct ConsoleUsers: Sendable {
    let client: PostgresClient
    let hasher: PasswordHasher

    public init(client: PostgresClient, hasher: PasswordHasher = .standard) {
        self.client = client
        self.hasher = hasher
    }

    static let upsertSQL = """
        INSERT INTO iap.console_users (name, role, password_hash) VALUES ($1, $2, $3)
        ON CONFLICT (name) DO UPDATE SET role = EXCLUDED.role, password_hash = EXCLUDED.password_hash, disabled_at = NULL
        """
    static let findSQL = "SELECT role, password_hash FROM iap.console_users WHERE name = $1 AND disabled_at IS NULL"

    /// Adds the user, or resets an existing user's role and password (and enables it again).
    public func add(name: String, role: ConsoleRole, password: String) async throws {
        guard (1...200).contains(name.count), !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw ConsoleUserError.invalidName
        }
        guard !password.isEmpty else { throw ConsoleUserError.emptyPassword }
        _ = try await client.query(Self.upsertSQL, [name, role.rawValue, try hasher.hash(password)])
    }

    /// The role when the password is right; nil otherwise (unknown user costs the same time).
    func checkPassword(name: String, password: String) async throws -> ConsoleRole? {
        guard let row = try await client.query(Self.findSQL, [name]).first,
              let role = ConsoleRole(rawValue: try row.decode(String.self, at: 0)),
              let stored: String = try row.decode(at: 1) else {
            PasswordHasher.burnEquivalentWork(password)
            return nil
        }
        return PasswordHasher.verify(password, against: stored) ? role : nil
    }

    /// The role of an enabled user (the SSO proxy vouched for who they are).
    func role(of name: String) async throws -> ConsoleRole? {
        guard let row = try await client.query(Self.findSQL, [name]).first else { return nil }
        return ConsoleRole(rawValue: try row.decode(String.self, at: 0))
    }
}

/// The console's roles: `viewer` reads, `support` reads and acts (credit, resolve, lookup).
public enum ConsoleRole: String, Sendable, CaseIterable {
    case viewer
    case support

    public var mayAct: Bool { self == .support }
}

/// Who is signed in, for the length of one request.
public struct ConsoleUser: Sendable, Equatable {
    public let name: String
    public let role: ConsoleRole
    /// The session's CSRF token, carried by every form this user is shown.
    public let csrfToken: String
}

/// An error from libpq or the server, carrying the SQLSTATE so callers can tell
/// a duplicate from a lost connection from a serialization conflict.
public struct PostgresError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// Could not open a connection (bad URL, server down, auth).
        case connectionFailed
        /// The connection broke while in use; the statement's fate is unknown.
        case connectionLost
        /// The server rejected the statement; see `sqlState`.
        case server
        /// COPY or protocol misuse on our side.
        case client
        /// The call ran past its deadline; the connection was abandoned and the statement's
        /// fate is unknown (as with `connectionLost`, which callers already handle).
        case timedOut
    }

    public let kind: Kind
    public let sqlState: String?
    public let message: String
    public let detail: String?

    public init(kind: Kind, sqlState: String? = nil, message: String, detail: String? = nil) {
        self.kind = kind
        self.sqlState = sqlState
        self.message = message
        self.detail = detail
    }

    public var isTimeout: Bool { kind == .timedOut }
    public var isUniqueViolation: Bool { sqlState == "23505" }
    public var isSerializationFailure: Bool { sqlState == "40001" || sqlState == "40P01" }
    public var isConnectionLost: Bool {
        // Class 08 (connection exception) and 57P01..57P03 (admin shutdown, crash shutdown,
        // cannot connect now) mean the session is gone, not that the statement is wrong.
        kind == .connectionLost || kind == .timedOut || sqlState?.hasPrefix("08") == true
            || ["57P01", "57P02", "57P03"].contains(sqlState ?? "")
    }
    /// Worth retrying on a fresh connection or transaction.
    public var isTransient: Bool { isConnectionLost || isSerializationFailure || kind == .connectionFailed }

    /// The same error with `prefix` before its message (which host it came from).
    func prefixed(_ prefix: String) -> PostgresError {
        PostgresError(kind: kind, sqlState: sqlState, message: prefix + message, detail: detail)
    }

    public var description: String {
        var text = "postgres: " + message
        if let sqlState { text += " (SQLSTATE \(sqlState))" }
        return text
    }
}

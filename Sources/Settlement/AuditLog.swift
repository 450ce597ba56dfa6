import Foundation
import Observability
import Postgres

/// One row in `iap.audit_log`.
public struct AuditEntry: Sendable {
    public let id: Int
    public let at: Date
    public let actor: String
    public let action: String
    public let target: String?
    public let detailsJSON: String
}

/// Every support action (credit, resolve, lookup, login, failed login), from the console and from
/// the CLI (`alerts credit`, `alerts resolve`, `support lookup-order`), as a row and a log line.
/// The one writer of `iap.audit_log`; the log event stays `console_audit` for both.
public struct AuditLog: Sendable {
    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    static let insertSQL = "INSERT INTO iap.audit_log (actor, action, target, details) VALUES ($1, $2, $3, $4::jsonb)"
    static let pageSQL = """
        SELECT id, at, actor, action, target, details::text FROM iap.audit_log
        WHERE id < $1 ORDER BY id DESC LIMIT $2
        """

    /// A row of its own (sign-ins, refusals: nothing else to commit with it), and the log line.
    public func record(actor: String, action: String, target: String?, details: [String: String] = [:]) async throws {
        _ = try await client.query(Self.insertSQL, Self.binds(actor, action, target, details))
        logLine(actor: actor, action: action, target: target, details: details)
    }

    /// The row inside the caller's transaction, so the change and its record commit together;
    /// call `logLine` once it has committed.
    public func insert(on connection: PostgresConnection, actor: String, action: String, target: String?,
                       details: [String: String] = [:]) async throws {
        _ = try await connection.query(Self.insertSQL, Self.binds(actor, action, target, details))
    }

    public func logLine(actor: String, action: String, target: String?, details: [String: String] = [:]) {
        var fields: [(key: String, value: LogValue)] = [("actor", .string(actor)), ("action", .string(action))]
        if let target { fields.append(("target", .string(target))) }
        for (key, value) in details.sorted(by: { $0.key < $1.key }) { fields.append((key, .string(value))) }
        logger.log(action == "login_failed" ? .warning : .notice, "console_audit", fields: fields)
    }

    private static func binds(_ actor: String, _ action: String, _ target: String?, _ details: [String: String]) -> [any PostgresEncodable] {
        let json = (try? JSONSerialization.data(withJSONObject: details, options: [.sortedKeys])).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        return [actor, action, target, json]
    }

    /// Newest first, `before` an id (keyset).
    public func page(before: Int, limit: Int) async throws -> [AuditEntry] {
        try await client.query(Self.pageSQL, [before, limit]).map { row in
            AuditEntry(id: try row.decode(at: 0), at: try row.decode(at: 1), actor: try row.decode(at: 2),
                       action: try row.decode(at: 3), target: try row.decode(at: 4), detailsJSON: try row.decode(at: 5))
        }
    }
}

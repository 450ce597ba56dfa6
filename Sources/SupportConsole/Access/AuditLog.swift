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

/// Every console action (credit, resolve, lookup, login, failed login) as a row and a log line (SPEC 10).
public struct AuditLog: Sendable {
    let client: PostgresClient
    let logger: Logger

    static let insertSQL = "INSERT INTO iap.audit_log (actor, action, target, details) VALUES ($1, $2, $3, $4::jsonb)"
    static let pageSQL = """
        SELECT id, at, actor, action, target, details::text FROM iap.audit_log
        WHERE id < $1 ORDER BY id DESC LIMIT $2
        """

    public func record(actor: String, action: String, target: String?, details: [String: String] = [:]) async throws {
        let json = (try? JSONSerialization.data(withJSONObject: details, options: [.sortedKeys])).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        _ = try await client.query(Self.insertSQL, [actor, action, target, json])
        var fields: [(key: String, value: LogValue)] = [("actor", .string(actor)), ("action", .string(action))]
        if let target { fields.append(("target", .string(target))) }
        for (key, value) in details.sorted(by: { $0.key < $1.key }) { fields.append((key, .string(value))) }
        logger.log(action == "login_failed" ? .warning : .notice, "console_audit", fields: fields)
    }

    /// Newest first, `before` an id (keyset).
    public func page(before: Int, limit: Int) async throws -> [AuditEntry] {
        try await client.query(Self.pageSQL, [before, limit]).map { row in
            AuditEntry(id: try row.decode(at: 0), at: try row.decode(at: 1), actor: try row.decode(at: 2),
                       action: try row.decode(at: 3), target: try row.decode(at: 4), detailsJSON: try row.decode(at: 5))
        }
    }
}

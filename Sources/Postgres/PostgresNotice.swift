import CLibPQ

/// Something the server said outside a result: a NOTICE, a WARNING (PostgreSQL 15 sends
/// collation warnings during the handshake, and "terminating connection" before it goes).
public struct PostgresNotice: Sendable, Equatable {
    /// Never localized: `DEBUG`, `LOG`, `INFO`, `NOTICE`, `WARNING`, `ERROR`, `FATAL`, `PANIC`.
    public let severity: String
    public let sqlState: String?
    public let message: String

    public init(severity: String, sqlState: String?, message: String) {
        self.severity = severity
        self.sqlState = sqlState
        self.message = message
    }

    /// WARNING and worse: what an operator should see at the default log level.
    public var isWarningOrWorse: Bool { ["WARNING", "ERROR", "FATAL", "PANIC"].contains(severity) }

    init(result: OpaquePointer) {
        func field(_ code: UInt8) -> String? { PQresultErrorField(result, Int32(code)).map { String(cString: $0) } }
        severity = field(UInt8(ascii: "V")) ?? field(UInt8(ascii: "S")) ?? "NOTICE" // PG_DIAG_SEVERITY_NONLOCALIZED
        sqlState = field(UInt8(ascii: "C"))
        message = LibpqSession.oneLine(field(UInt8(ascii: "M")) ?? String(cString: PQresultErrorMessage(result)))
    }
}

/// The notice receiver's context: libpq calls a C function with this object's address.
/// Installed right after the connection object exists, before the handshake is driven.
final class NoticeReceiver {
    let handler: @Sendable (PostgresNotice) -> Void

    init(handler: @escaping @Sendable (PostgresNotice) -> Void) { self.handler = handler }

    /// Points `handle`'s notices at `receiver` (nil: dropped). The caller keeps `receiver`
    /// alive as long as `handle`.
    static func install(_ receiver: NoticeReceiver?, on handle: OpaquePointer) {
        guard let receiver else {
            PQsetNoticeReceiver(handle, { _, _ in }, nil)
            return
        }
        PQsetNoticeReceiver(handle, { context, result in
            guard let context, let result else { return }
            let receiver = Unmanaged<NoticeReceiver>.fromOpaque(context).takeUnretainedValue()
            receiver.handler(PostgresNotice(result: result))
        }, Unmanaged.passUnretained(receiver).toOpaque())
    }
}

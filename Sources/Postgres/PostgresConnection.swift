import CLibPQ
import Foundation
import Synchronization

/// One libpq connection. Every libpq call runs on the connection's own thread
/// (`ConnectionThread`), so callers simply `await`. A connection serves one caller
/// at a time; share connections through `PostgresClient`.
public final class PostgresConnection: @unchecked Sendable {
    // Safety: `handle` and `prepared` are only read or written on `thread`.
    private var handle: OpaquePointer?
    /// Statements prepared on this session, by SQL text: the hot statements (claim,
    /// complete, ledger) are parsed and planned once per connection, not per call.
    private var prepared: [String: String] = [:]
    private static let preparedLimit = 256
    /// Open, healthy and outside a transaction, as of the last call: read without a thread hop
    /// when the pool takes the connection back.
    private let reusable = Atomic<Bool>(false)
    private let thread: ConnectionThread
    private let conninfo: String
    private let applicationName: String

    private init(conninfo: String, applicationName: String) {
        self.conninfo = conninfo
        self.applicationName = applicationName
        self.thread = ConnectionThread(name: "pg-\(applicationName)")
    }

    deinit {
        if let handle { PQfinish(handle) }
        thread.stop()
    }

    /// Opens a connection from a libpq URL (`postgresql://…`) or key=value conninfo.
    public static func connect(_ conninfo: String, applicationName: String = "receipt-worker") async throws -> PostgresConnection {
        let connection = PostgresConnection(conninfo: conninfo, applicationName: applicationName)
        try await connection.onThread { try connection.open() }
        return connection
    }

    /// Runs one parameterised statement (extended protocol) and returns its rows.
    /// A connection that broke earlier is re-opened first.
    public func query(_ sql: String, _ binds: [any PostgresEncodable] = []) async throws -> PostgresRows {
        let parameters = binds.map(\.postgresBind)
        // libpq reads text parameters up to the first NUL: refuse rather than store a truncated value.
        if let index = parameters.firstIndex(where: { $0.format == .text && $0.bytes?.contains(0) == true }) {
            throw PostgresError(kind: .client, sqlState: "22021",
                                message: "parameter $\(index + 1) contains a NUL character, which text cannot hold")
        }
        return try await onThread { [self] in
            try reopenIfBroken()
            if let name = try preparedName(sql, parameterCount: parameters.count) {
                return try ParameterBuffer(parameters).withArrays { values, lengths, formats in
                    try consume(PQexecPrepared(handle, name, Int32(parameters.count), values, lengths, formats, 0))
                }
            }
            return try ParameterBuffer(parameters).withArrays { values, lengths, formats in
                try consume(PQexecParams(handle, sql, Int32(parameters.count), nil, values, lengths, formats, 0))
            }
        }
    }

    public func query(_ sql: String, _ binds: any PostgresEncodable...) async throws -> PostgresRows {
        try await query(sql, binds)
    }

    /// Runs a script of one or more statements with the simple protocol (migrations).
    public func execute(script: String) async throws {
        try await onThread { [self] in
            try reopenIfBroken()
            guard PQsendQuery(handle, script) == 1 else { throw lostOrFailed() }
            var firstError: PostgresError?
            while let result = PQgetResult(handle) {
                do { _ = try consume(result) } catch let error as PostgresError { firstError = firstError ?? error }
            }
            if let firstError { throw firstError }
        }
    }

    /// COPY … FROM STDIN with the given bytes already in COPY text format.
    /// Returns the number of rows the server loaded.
    @discardableResult
    public func copyIn(_ copyStatement: String, data: [UInt8]) async throws -> Int {
        try await onThread { [self] in
            try reopenIfBroken()
            guard let start = PQexec(handle, copyStatement) else { throw lostOrFailed() }
            let status = PQresultStatus(start)
            if status != PGRES_COPY_IN {
                _ = try consume(start) // throws the server's error
                throw PostgresError(kind: .client, message: "statement is not COPY FROM STDIN")
            }
            PQclear(start)
            var sendError: PostgresError?
            let chunk = 1 << 20
            var offset = 0
            data.withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) { chars in
                    while offset < chars.count {
                        let length = min(chunk, chars.count - offset)
                        if PQputCopyData(handle, chars.baseAddress! + offset, Int32(length)) != 1 {
                            sendError = lostOrFailed()
                            return
                        }
                        offset += length
                    }
                }
            }
            if sendError == nil, PQputCopyEnd(handle, nil) != 1 { sendError = lostOrFailed() }
            var rows = 0
            var serverError: PostgresError?
            while let result = PQgetResult(handle) {
                do { rows += try consume(result).affectedRows } catch let error as PostgresError { serverError = serverError ?? error }
            }
            if let error = serverError ?? sendError { throw error }
            return rows
        }
    }

    /// COPY … FROM STDIN of rows of text values (NULL as nil).
    @discardableResult
    public func copyIn(_ copyStatement: String, rows: [[String?]]) async throws -> Int {
        try await copyIn(copyStatement, data: CopyTextEncoder.encode(rows))
    }

    /// BEGIN … COMMIT around `body`; ROLLBACK if it throws.
    public func transaction<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        _ = try await query("BEGIN")
        do {
            let value = try await body(self)
            _ = try await query("COMMIT")
            return value
        } catch {
            _ = try? await query("ROLLBACK")
            throw error
        }
    }

    /// Open, healthy and outside any transaction after its last statement: safe to hand to
    /// the next caller.
    public var isReusable: Bool { reusable.load(ordering: .acquiring) }

    /// Runs `body` on the connection thread and records afterwards whether the session is reusable.
    private func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await thread.run { [self] in
            defer {
                reusable.store(handle != nil && PQstatus(handle) == CONNECTION_OK && PQtransactionStatus(handle) == PQTRANS_IDLE,
                               ordering: .releasing)
            }
            return try body()
        }
    }

    public func close() async {
        _ = try? await onThread { [self] in
            if let handle { PQfinish(handle) }
            handle = nil
        }
        thread.stop()
    }

    // MARK: - On the connection thread

    private func open() throws {
        if let handle { PQfinish(handle) }
        prepared.removeAll() // a new session has none
        handle = PQconnectdb(conninfo)
        guard let handle, PQstatus(handle) == CONNECTION_OK else {
            let message = handle.map { String(cString: PQerrorMessage($0)) } ?? "out of memory"
            if let handle { PQfinish(handle) }
            self.handle = nil
            throw PostgresError(kind: .connectionFailed, message: "cannot connect: " + Self.oneLine(message))
        }
        // Server NOTICEs (e.g. "already exists, skipping") are not ours to print.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
        // Fixed session settings make text decoding unambiguous.
        let setup = "SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'; SET IntervalStyle = 'postgres'; "
            + "SET application_name = '\(applicationName.filter { $0.isLetter || $0.isNumber || $0 == "-" })'"
        guard let result = PQexec(handle, setup) else { throw lostOrFailed() }
        _ = try consume(result)
    }

    /// The prepared statement for `sql`, preparing it on first use; nil for statements
    /// that are not plain DML/queries (utility commands run unprepared) or past the limit.
    private func preparedName(_ sql: String, parameterCount: Int) throws -> String? {
        if let name = prepared[sql] { return name }
        let head = sql.drop { $0 == " " || $0 == "\n" || $0 == "\t" }.prefix(6).uppercased()
        guard ["SELECT", "INSERT", "UPDATE", "DELETE", "WITH"].contains(where: { head.hasPrefix($0) }),
              prepared.count < Self.preparedLimit else { return nil }
        let name = "rw_\(prepared.count)"
        _ = try consume(PQprepare(handle, name, sql, Int32(parameterCount), nil))
        prepared[sql] = name
        return name
    }

    private func reopenIfBroken() throws {
        if handle == nil || PQstatus(handle) != CONNECTION_OK { try open() }
    }

    /// Copies a result out and frees it, or turns it into an error (also freeing it).
    private func consume(_ result: OpaquePointer?) throws -> PostgresRows {
        guard let result else { throw lostOrFailed() }
        defer { PQclear(result) }
        switch PQresultStatus(result) {
        case PGRES_TUPLES_OK, PGRES_SINGLE_TUPLE:
            let rowCount = Int(PQntuples(result))
            let columnCount = Int(PQnfields(result))
            let columns = (0..<columnCount).map { String(cString: PQfname(result, Int32($0))) }
            var cells: [[String?]] = []
            cells.reserveCapacity(rowCount)
            for row in 0..<Int32(rowCount) {
                var values: [String?] = []
                values.reserveCapacity(columnCount)
                for column in 0..<Int32(columnCount) {
                    values.append(PQgetisnull(result, row, column) == 1 ? nil : String(cString: PQgetvalue(result, row, column)))
                }
                cells.append(values)
            }
            return PostgresRows(columns: columns, cells: cells, affectedRows: rowCount)
        case PGRES_COMMAND_OK, PGRES_EMPTY_QUERY, PGRES_COPY_IN, PGRES_COPY_OUT:
            let affected = Int(String(cString: PQcmdTuples(result))) ?? 0
            return PostgresRows(columns: [], cells: [], affectedRows: affected)
        default:
            throw error(from: result)
        }
    }

    private func error(from result: OpaquePointer) -> PostgresError {
        func field(_ code: Int32) -> String? {
            PQresultErrorField(result, code).map { String(cString: $0) }
        }
        let sqlState = field(Int32(UInt8(ascii: "C"))) // PG_DIAG_SQLSTATE
        let message = field(Int32(UInt8(ascii: "M"))) ?? Self.oneLine(String(cString: PQresultErrorMessage(result)))
        let detail = field(Int32(UInt8(ascii: "D")))
        if sqlState == nil, PQstatus(handle) != CONNECTION_OK {
            return PostgresError(kind: .connectionLost, message: Self.oneLine(message))
        }
        let kind: PostgresError.Kind = PQstatus(handle) == CONNECTION_OK ? .server : .connectionLost
        return PostgresError(kind: kind, sqlState: sqlState, message: message, detail: detail)
    }

    private func lostOrFailed() -> PostgresError {
        let message = handle.map { Self.oneLine(String(cString: PQerrorMessage($0))) } ?? "no connection"
        if handle == nil || PQstatus(handle) != CONNECTION_OK {
            return PostgresError(kind: .connectionLost, message: message.isEmpty ? "connection lost" : message)
        }
        return PostgresError(kind: .client, message: message)
    }

    static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
    }
}

extension PostgresConnection {
    /// Why libpq cannot parse this URL/conninfo, or nil when it can (no connection is made).
    public static func conninfoProblem(_ conninfo: String) -> String? {
        var message: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(conninfo, &message) else {
            // libpq quotes the whole URL in some messages: never echo it (it may hold a password).
            let text = message.map { oneLine(String(cString: $0)).replacingOccurrences(of: conninfo, with: "<url>") }
                ?? "not a valid PostgreSQL URL or conninfo"
            if let message { PQfreemem(message) }
            return text
        }
        PQconninfoFree(options)
        return nil
    }
}

import CLibPQ
import Foundation
import Synchronization

/// One libpq session. Every libpq call runs on the connection's own thread
/// (`ConnectionThread`), driven non-blocking with a deadline (`LibpqSession`), so callers
/// simply `await` and a silent peer costs one deadline. A connection serves one caller
/// at a time; share connections through `PostgresClient`.
public final class PostgresConnection: @unchecked Sendable {
    // Safety: `session`, `prepared` and the transaction flags are only used on `thread`.
    private let session: LibpqSession
    /// Statements prepared on this session, by SQL text: the hot statements (claim,
    /// complete, ledger) are parsed and planned once per connection, not per call.
    private var prepared: [String: String] = [:]
    /// The number in the next prepared statement's name: names are never reused in a session,
    /// as a statement forgotten here (`forgetPrepared`) still exists on the server.
    private var nextPreparedNumber = 0
    private static let preparedLimit = 256
    /// The session broke inside `transaction`: nothing more may run until it ends, or the
    /// rest of the body would run on a new session, outside the transaction.
    private var transactionBroken = false
    private var inTransaction = false
    /// `transaction` began but sent nothing yet: these statements go out with its first one.
    private var pendingBegin: [String]?
    /// The call on its way carries COMMIT. Past its deadline such a call is closed, never
    /// cancelled: a COMMIT cancelled while it waits for a synchronous standby stays committed on
    /// the primary without being replicated, so only the commit witness may say what happened.
    private var commitInFlight = false
    /// Open, healthy and outside a transaction, as of the last call: read without a thread hop
    /// when the pool takes the connection back.
    private let reusable = Atomic<Bool>(false)
    /// Inside a transaction (begun, or its BEGIN pending), as of the last call: read without a
    /// thread hop when `transaction` ends.
    private let transactionOpen = Atomic<Bool>(false)
    private let pooled = Atomic<Bool>(false)
    private let thread: ConnectionThread
    public let configuration: PostgresConfiguration

    private init(configuration: PostgresConfiguration, hostPreference: HostPreference?) {
        self.configuration = configuration
        self.session = LibpqSession(configuration: configuration, hostPreference: hostPreference)
        self.thread = ConnectionThread(name: "pg-\(configuration.applicationName)")
    }

    deinit { thread.stop() }

    /// Opens a connection from a libpq URL (`postgresql://…`) or key=value conninfo, with default deadlines.
    public static func connect(_ conninfo: String, applicationName: String = "receipt-worker") async throws -> PostgresConnection {
        try await connect(PostgresConfiguration(conninfo: conninfo, applicationName: applicationName))
    }

    public static func connect(_ configuration: PostgresConfiguration) async throws -> PostgresConnection {
        try await connect(configuration, hostPreference: HostPreference(configuration: configuration))
    }

    /// A pool's connection: its sessions (the first and any re-opened one) share the pool's host order.
    static func connect(_ configuration: PostgresConfiguration, hostPreference: HostPreference?) async throws -> PostgresConnection {
        let connection = PostgresConnection(configuration: configuration, hostPreference: hostPreference)
        do {
            try await connection.onThread { try connection.open() }
        } catch {
            connection.thread.stop()
            throw error
        }
        return connection
    }

    /// The session goes through a connection pooler (PgBouncer): no session state is kept.
    public var isBehindPooler: Bool { pooled.load(ordering: .relaxed) }

    /// Runs one parameterised statement (extended protocol) and returns its rows.
    /// A connection that broke earlier is re-opened first (outside a transaction).
    public func query(_ sql: String, _ binds: [any PostgresEncodable] = []) async throws -> PostgresRows {
        try await pipeline([PostgresStatement(sql, binds)])[0]
    }

    /// Runs the statements in order in one round trip (libpq pipeline mode) and returns each
    /// one's rows. Each statement sees what the ones before it did (and took its own snapshot
    /// after them), as if run one by one; the first error stops the rest and is thrown.
    /// Outside a transaction the pipeline is one implicit transaction: all of it or nothing.
    public func pipeline(_ statements: [PostgresStatement]) async throws -> [PostgresRows] {
        for statement in statements { try statement.checkParameters() }
        return try await onThread { [self] in try send(statements) }
    }

    /// Inside `transaction`: runs the statements and COMMIT in one round trip; `transaction`
    /// then has nothing left to commit. If any statement fails, nothing commits.
    public func commit(after statements: [PostgresStatement]) async throws -> [PostgresRows] {
        for statement in statements { try statement.checkParameters() }
        return try await onThread { [self] in
            guard inTransaction else { throw PostgresError(kind: .client, message: "commit(after:) outside a transaction") }
            return try sendCommitting(statements)
        }
    }

    public func query(_ sql: String, _ binds: any PostgresEncodable...) async throws -> PostgresRows {
        try await query(sql, binds)
    }

    /// Runs a script of one or more statements with the simple protocol (migrations).
    public func execute(script: String) async throws {
        try await onThread { [self] in
            try reopenIfBroken()
            let deadline = Deadline(secondsFromNow: configuration.callTimeout)
            try beginIfPending(deadline: deadline)
            try session.simpleQuery(script, deadline: deadline)
        }
    }

    /// COPY … FROM STDIN with the given bytes already in COPY text format.
    /// Returns the number of rows the server loaded.
    @discardableResult
    public func copyIn(_ copyStatement: String, data: [UInt8]) async throws -> Int {
        try await onThread { [self] in
            try reopenIfBroken()
            let deadline = Deadline(secondsFromNow: configuration.callTimeout)
            try beginIfPending(deadline: deadline)
            guard session.handle.map({ PQsendQuery($0, copyStatement) }) == 1 else { throw session.lostOrFailed() }
            try session.flush(until: deadline)
            guard let start = try session.nextResult(until: deadline) else { throw session.lostOrFailed() }
            if PQresultStatus(start) != PGRES_COPY_IN {
                _ = try session.consume(start) // throws the server's error
                while let extra = try session.nextResult(until: deadline) { PQclear(extra) }
                throw PostgresError(kind: .client, message: "statement is not COPY FROM STDIN")
            }
            PQclear(start)
            let chunk = 1 << 20
            try data.withUnsafeBufferPointer { buffer in
                try buffer.withMemoryRebound(to: CChar.self) { chars in
                    var offset = 0
                    while offset < chars.count {
                        let length = min(chunk, chars.count - offset)
                        try session.putCopyData(UnsafeBufferPointer(rebasing: chars[offset..<offset + length]), until: deadline)
                        offset += length
                    }
                }
            }
            try session.putCopyEnd(until: deadline)
            var rows = 0
            var serverError: Error?
            while let result = try session.nextResult(until: deadline) {
                do { rows += try session.consume(result).affectedRows } catch { serverError = serverError ?? error }
            }
            if let serverError { throw serverError }
            return rows
        }
    }

    /// COPY … FROM STDIN of rows of text values (NULL as nil).
    @discardableResult
    public func copyIn(_ copyStatement: String, rows: [[String?]]) async throws -> Int {
        try await copyIn(copyStatement, data: CopyTextEncoder.encode(rows))
    }

    /// BEGIN … COMMIT around `body`; ROLLBACK if it throws. Behind a pooler the
    /// transaction carries its own limits (`SET LOCAL`), since the session keeps none.
    /// BEGIN is not a round trip of its own: it travels with the body's first statement.
    /// `planning: .reused` is for bodies of fixed-shape statements run thousands of times
    /// (`PostgresConfiguration.reusedPlansTransactionBegin`); `durability: .unflushed` for one whose
    /// loss in a crash is harmless (`CommitDurability`).
    public func transaction<T: Sendable>(planning: TransactionPlanning = .perRun, durability: CommitDurability = .flushed,
                                         _ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await onThread { [self] in try begin(planning: planning, durability: durability) }
        do {
            let value = try await body(self)
            // A body that ended with `commit(after:)` left nothing to do here: no trip to the thread.
            guard transactionOpen.load(ordering: .acquiring) else { return value }
            try await onThread { [self] in
                if pendingBegin != nil {
                    pendingBegin = nil // nothing was sent: nothing to commit
                    inTransaction = false
                } else if inTransaction {
                    _ = try send([PostgresStatement("COMMIT")])
                }
            }
            return value
        } catch {
            await endFailedTransaction()
            throw error
        }
    }

    /// A transaction of `statements` alone: what `transaction { try await $0.commit(after: statements) }`
    /// does, BEGIN, the settings, the statements and COMMIT in one round trip, in one trip to the
    /// connection's thread instead of three (each a wake-up of two threads: under load, about as
    /// long as a short statement).
    public func transaction(planning: TransactionPlanning = .perRun, durability: CommitDurability = .flushed,
                            committing statements: [PostgresStatement]) async throws -> [PostgresRows] {
        for statement in statements { try statement.checkParameters() }
        do {
            return try await onThread { [self] in
                try begin(planning: planning, durability: durability)
                return try sendCommitting(statements)
            }
        } catch {
            await endFailedTransaction()
            throw error
        }
    }

    /// Open, healthy and outside any transaction after its last statement: safe to hand to
    /// the next caller.
    public var isReusable: Bool { reusable.load(ordering: .acquiring) }

    /// Runs `body` on the connection thread. A call past its deadline abandons the session
    /// (cancel sent, socket closed); every call's result is reported to the observer.
    private func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await thread.run { [self] in
            defer {
                if session.isIdle && pendingBegin == nil { inTransaction = false }
                reusable.store(session.isIdle && !transactionBroken && pendingBegin == nil, ordering: .releasing)
                transactionOpen.store(inTransaction || pendingBegin != nil, ordering: .releasing)
            }
            do {
                let value = try body()
                configuration.observer?.databaseCallFinished(.ok)
                return value
            } catch let error as PostgresError {
                if error.isTimeout {
                    if commitInFlight { session.close() } else { session.abandon() }
                }
                commitInFlight = false
                if !session.isOpen {
                    if inTransaction { transactionBroken = true }
                    session.close()
                }
                configuration.observer?.databaseCallFinished(error.isTimeout ? .timeout : .error)
                throw error
            } catch {
                configuration.observer?.databaseCallFinished(.error)
                throw error
            }
        }
    }

    public func close() async {
        _ = try? await thread.run { [self] in session.close() }
        thread.stop()
    }

    // MARK: - On the connection thread

    private func open() throws {
        prepared.removeAll() // a new session has none
        nextPreparedNumber = 0
        try session.open()
        pooled.store(session.behindPooler, ordering: .relaxed)
    }

    private var usesPreparedStatements: Bool {
        switch configuration.preparedStatements {
        case .on: true
        case .off: false
        case .auto: !session.behindPooler
        }
    }

    /// The prepared statement for `sql`, preparing it on first use; nil when statements are
    /// not prepared here, for statements that are not plain DML/queries (utility commands run
    /// unprepared), or past the limit.
    private func preparedName(_ sql: String, parameterCount: Int32, deadline: Deadline) throws -> String? {
        guard usesPreparedStatements else { return nil }
        if let name = prepared[sql] { return name }
        let head = sql.drop { $0 == " " || $0 == "\n" || $0 == "\t" }.prefix(6).uppercased()
        guard ["SELECT", "INSERT", "UPDATE", "DELETE", "WITH"].contains(where: { head.hasPrefix($0) }),
              prepared.count < Self.preparedLimit else { return nil }
        let name = "rw_\(nextPreparedNumber)"
        nextPreparedNumber += 1
        try session.roundTrip(until: deadline, send: { PQsendPrepare($0, name, sql, parameterCount, nil) },
                              each: { _ = try self.session.consume($0) })
        prepared[sql] = name
        return name
    }

    /// Sends `statements` (after a pending BEGIN) in one round trip: a single statement as
    /// a plain call, several in pipeline mode.
    private func send(_ statements: [PostgresStatement]) throws -> [PostgresRows] {
        try reopenIfBroken()
        let deadline = Deadline(secondsFromNow: configuration.callTimeout)
        let begin = (pendingBegin ?? []).map { PostgresStatement($0) }
        pendingBegin = nil
        let all = begin + statements
        commitInFlight = all.contains { $0.sql == "COMMIT" }
        var rows = [PostgresRows?](repeating: nil, count: all.count)
        let names = try all.map { try preparedName($0.sql, parameterCount: Int32($0.parameters.count), deadline: deadline) }
        let sends = zip(all, names).map { statement, name in
            { (handle: OpaquePointer) -> Int32 in
                ParameterBuffer(statement.parameters).withArrays { values, lengths, formats in
                    let count = Int32(statement.parameters.count)
                    if let name { return PQsendQueryPrepared(handle, name, count, values, lengths, formats, 0) }
                    return PQsendQueryParams(handle, statement.sql, count, nil, values, lengths, formats, 0)
                }
            }
        }
        do {
            if sends.count == 1 {
                try session.roundTrip(until: deadline, send: sends[0], each: { rows[0] = try session.consume($0) })
            } else {
                try session.pipeline(until: deadline, sends: sends, each: { rows[$0] = try session.consume($1) })
            }
        } catch let error as PostgresError where error.sqlState == "0A000" {
            forgetPrepared(names.compactMap { $0 })
            throw error
        }
        commitInFlight = false
        // An aborted transaction's COMMIT is answered ROLLBACK: nothing was committed.
        for (statement, result) in zip(all, rows) where statement.sql == "COMMIT" && result?.commandTag == "ROLLBACK" {
            throw PostgresError(kind: .server, sqlState: "25P02",
                                message: "COMMIT was answered ROLLBACK: the transaction had failed earlier, nothing was committed")
        }
        return rows.dropFirst(begin.count).map { $0 ?? PostgresRows(affectedRows: 0) }
    }

    /// `statements` and COMMIT in one round trip; the statements' rows.
    private func sendCommitting(_ statements: [PostgresStatement]) throws -> [PostgresRows] {
        Array(try send(statements + [PostgresStatement("COMMIT")]).dropLast())
    }

    /// A prepared statement whose result changed type under it (a column's type altered by a
    /// migration, say) is refused by PostgreSQL on every run (`cached plan must not change result
    /// type`, SQLSTATE 0A000) until it is prepared again: forgotten here, the failed call is the
    /// only one. Any 0A000 forgets the call's statements; the others cost one prepare more.
    private func forgetPrepared(_ names: [String]) {
        let stale = Set(names)
        prepared = prepared.filter { !stale.contains($0.value) }
    }

    /// For calls that cannot be pipelined (scripts, COPY): a pending BEGIN goes first, alone.
    private func beginIfPending(deadline: Deadline) throws {
        guard let begin = pendingBegin else { return }
        pendingBegin = nil
        try session.simpleQuery(begin.joined(separator: "; "), deadline: deadline)
    }

    /// Opens a transaction: its BEGIN (and settings) go out with its first statement.
    private func begin(planning: TransactionPlanning, durability: CommitDurability) throws {
        try reopenIfBroken()
        let begin = session.behindPooler ? configuration.pooledTransactionBegin
            : planning == .reused ? configuration.reusedPlansTransactionBegin : ["BEGIN"]
        pendingBegin = durability == .unflushed ? begin + [PostgresConfiguration.unflushedCommit] : begin
        inTransaction = true
    }

    /// After a transaction's body failed: ROLLBACK if anything was sent on a session still open,
    /// and the connection is outside any transaction again.
    private func endFailedTransaction() async {
        _ = try? await onThread { [self] in
            if pendingBegin == nil, session.isOpen {
                try session.simpleQuery("ROLLBACK", deadline: Deadline(secondsFromNow: configuration.callTimeout))
            }
            pendingBegin = nil
            transactionBroken = false
            inTransaction = false
        }
    }

    private func reopenIfBroken() throws {
        if transactionBroken {
            throw PostgresError(kind: .connectionLost, message: "the connection of this transaction was lost")
        }
        if !session.isOpen { try open() }
    }
}

extension PostgresConnection {
    /// Why libpq cannot parse this URL/conninfo, or nil when it can (no connection is made).
    public static func conninfoProblem(_ conninfo: String) -> String? {
        var message: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(conninfo, &message) else {
            // libpq quotes the whole URL in some messages: never echo it (it may hold a password).
            let text = message.map { LibpqSession.oneLine(String(cString: $0)).replacingOccurrences(of: conninfo, with: "<url>") }
                ?? "not a valid PostgreSQL URL or conninfo"
            if let message { PQfreemem(message) }
            return text
        }
        PQconninfoFree(options)
        return nil
    }
}

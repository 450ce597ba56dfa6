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
    /// A transaction sent before the reply of the one before it was handed back
    /// (`transaction(…sendingNext:)`), its own reply not read yet: nothing else may use the session
    /// until `replyOfSent` has read it.
    private var sentAhead: SentPipeline?
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

    /// A one-statement transaction like `transaction(planning:durability:committing:)`, whose
    /// successor may go out before its reply is handed back: as soon as the statement's rows are
    /// in, `sendingNext` is asked (on the connection's thread, with their number) and the
    /// transaction it returns is sent at once, with the same planning and durability. The server
    /// then runs it without waiting for this reply to be decoded and for the caller to ask again.
    /// Its reply is `replyOfSent`'s, and the connection serves nothing else until that is read:
    /// given back to its pool unread, it is dropped as broken. Nothing is sent ahead behind a
    /// pooler, or before the statements were prepared on this session.
    public func transaction<Next: Sendable>(planning: TransactionPlanning = .perRun, durability: CommitDurability = .flushed,
                                            committing statement: PostgresStatement,
                                            sendingNext: @escaping @Sendable (_ rows: Int) -> (statement: PostgresStatement, next: Next)?)
        async throws -> ChainedReply<Next> {
        try statement.checkParameters()
        let ahead = SendAhead(planning: planning, durability: durability, next: sendingNext)
        do {
            return try await onThread { [self] in
                try begin(planning: planning, durability: durability)
                let (rows, next) = try send([statement, PostgresStatement("COMMIT")], sendingAhead: ahead)
                return ChainedReply(rows: rows[0], next: next)
            }
        } catch {
            await endFailedTransaction()
            throw error
        }
    }

    /// The reply of the transaction `transaction(…sendingNext:)` sent ahead (or of the one this
    /// call's previous run sent), which may send the next in turn.
    public func replyOfSent<Next: Sendable>(sendingNext: @escaping @Sendable (_ rows: Int) -> (statement: PostgresStatement, next: Next)?)
        async throws -> ChainedReply<Next> {
        do {
            return try await onThread { [self] in
                guard let pipeline = sentAhead else {
                    throw PostgresError(kind: .client, message: "replyOfSent: no transaction was sent ahead on this connection")
                }
                sentAhead = nil
                inTransaction = true
                let ahead = SendAhead(planning: pipeline.planning, durability: pipeline.durability, next: sendingNext)
                let (rows, next) = try read(pipeline, until: Deadline(secondsFromNow: configuration.callTimeout), sendingAhead: ahead)
                return ChainedReply(rows: rows[0], next: next)
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
        if let name = prepared[sql] { return name }
        guard needsPreparing(sql) else { return nil }
        let name = "rw_\(nextPreparedNumber)"
        nextPreparedNumber += 1
        try session.roundTrip(until: deadline, send: { PQsendPrepare($0, name, sql, parameterCount, nil) },
                              each: { _ = try self.session.consume($0) })
        prepared[sql] = name
        return name
    }

    /// Whether `preparedName` would prepare `sql` now (a round trip of its own).
    private func needsPreparing(_ sql: String) -> Bool {
        guard usesPreparedStatements, prepared[sql] == nil, prepared.count < Self.preparedLimit else { return false }
        let head = sql.drop { $0 == " " || $0 == "\n" || $0 == "\t" }.prefix(6).uppercased()
        return ["SELECT", "INSERT", "UPDATE", "DELETE", "WITH"].contains(where: { head.hasPrefix($0) })
    }

    /// Sends `statements` (after a pending BEGIN) in one round trip: a single statement as
    /// a plain call, several in pipeline mode (where `ahead` may send the next transaction).
    private func send(_ statements: [PostgresStatement]) throws -> [PostgresRows] {
        try send(statements, sendingAhead: SendAhead<Never>?.none).rows
    }

    private func send<Next>(_ statements: [PostgresStatement], sendingAhead ahead: SendAhead<Next>?) throws -> (rows: [PostgresRows], next: Next?) {
        try reopenIfBroken()
        let deadline = Deadline(secondsFromNow: configuration.callTimeout)
        let begin = (pendingBegin ?? []).map { PostgresStatement($0) }
        pendingBegin = nil
        let all = begin + statements
        let names = try all.map { try preparedName($0.sql, parameterCount: Int32($0.parameters.count), deadline: deadline) }
        guard all.count == 1 else {
            let pipeline = SentPipeline(statements: all, names: names, beginCount: begin.count,
                                        planning: ahead?.planning ?? .perRun, durability: ahead?.durability ?? .flushed)
            try session.sendPipeline(sends(pipeline), until: deadline)
            return try read(pipeline, until: deadline, sendingAhead: ahead)
        }
        commitInFlight = all[0].sql == "COMMIT"
        var rows: PostgresRows?
        do {
            try session.roundTrip(until: deadline, send: sends(SentPipeline(statements: all, names: names))[0],
                                  each: { rows = try session.consume($0) })
        } catch let error as PostgresError where error.sqlState == "0A000" {
            forgetPrepared(names.compactMap { $0 })
            throw error
        }
        commitInFlight = false
        try checkCommitted(all, [rows])
        return ([rows ?? PostgresRows(affectedRows: 0)], nil)
    }

    /// How libpq sends each statement: by its prepared name, or with its text.
    private func sends(_ pipeline: SentPipeline) -> [(OpaquePointer) -> Int32] {
        zip(pipeline.statements, pipeline.names).map { statement, name in
            { (handle: OpaquePointer) -> Int32 in
                ParameterBuffer(statement.parameters).withArrays { values, lengths, formats in
                    let count = Int32(statement.parameters.count)
                    if let name { return PQsendQueryPrepared(handle, name, count, values, lengths, formats, 0) }
                    return PQsendQueryParams(handle, statement.sql, count, nil, values, lengths, formats, 0)
                }
            }
        }
    }

    /// Reads a pipeline sent on this session to its Sync; the rows of its statements after BEGIN's.
    /// With `ahead`, the next transaction may go out once the first statement after BEGIN's has
    /// its rows. A failure once it went out leaves its reply unread: the session is closed.
    private func read<Next>(_ pipeline: SentPipeline, until deadline: Deadline,
                            sendingAhead ahead: SendAhead<Next>?) throws -> (rows: [PostgresRows], next: Next?) {
        commitInFlight = pipeline.statements.contains { $0.sql == "COMMIT" }
        var rows = [PostgresRows?](repeating: nil, count: pipeline.statements.count)
        var next: Next?
        do {
            do {
                try session.readPipeline(commands: pipeline.statements.count, until: deadline) { index, result in
                    if let ahead, index == pipeline.beginCount, PQresultStatus(result) == PGRES_TUPLES_OK {
                        next = sendAhead(ahead, rows: Int(PQntuples(result)), until: deadline)
                    }
                    rows[index] = try session.consume(result)
                }
            } catch let error as PostgresError where error.sqlState == "0A000" {
                forgetPrepared(pipeline.names.compactMap { $0 })
                throw error
            }
            commitInFlight = false
            try checkCommitted(pipeline.statements, rows)
        } catch {
            guard sentAhead != nil else { throw error }
            sentAhead = nil
            session.close()
            throw PostgresError(kind: .connectionLost,
                                message: "a transaction was sent ahead of a reply that failed, session closed: \((error as? PostgresError)?.message ?? "\(error)")")
        }
        return (rows.dropFirst(pipeline.beginCount).map { $0 ?? PostgresRows(affectedRows: 0) }, next)
    }

    /// An aborted transaction's COMMIT is answered ROLLBACK: nothing was committed.
    private func checkCommitted(_ statements: [PostgresStatement], _ rows: [PostgresRows?]) throws {
        for (statement, result) in zip(statements, rows) where statement.sql == "COMMIT" && result?.commandTag == "ROLLBACK" {
            throw PostgresError(kind: .server, sqlState: "25P02",
                                message: "COMMIT was answered ROLLBACK: the transaction had failed earlier, nothing was committed")
        }
    }

    /// Sends the transaction `ahead` asks for after a statement of `rows` rows, unless it would
    /// need a round trip of its own first (a pooler's session, a statement not yet prepared); what
    /// `ahead` gave with it, if it went out. A failure to send closes the session: the reply being
    /// read then fails as lost.
    private func sendAhead<Next>(_ ahead: SendAhead<Next>, rows: Int, until deadline: Deadline) -> Next? {
        guard !session.behindPooler, sentAhead == nil, let (statement, next) = ahead.next(rows) else { return nil }
        let begin = beginStatements(planning: ahead.planning, durability: ahead.durability).map { PostgresStatement($0) }
        let all = begin + [statement, PostgresStatement("COMMIT")]
        guard (try? statement.checkParameters()) != nil, !all.contains(where: { needsPreparing($0.sql) }) else { return nil }
        let pipeline = SentPipeline(statements: all, names: all.map { prepared[$0.sql] }, beginCount: begin.count,
                                    planning: ahead.planning, durability: ahead.durability)
        do {
            try session.sendPipeline(sends(pipeline), until: deadline)
        } catch {
            session.close()
            return nil
        }
        sentAhead = pipeline
        return next
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
        pendingBegin = beginStatements(planning: planning, durability: durability)
        inTransaction = true
    }

    /// BEGIN and the transaction's settings.
    private func beginStatements(planning: TransactionPlanning, durability: CommitDurability) -> [String] {
        let begin = session.behindPooler ? configuration.pooledTransactionBegin
            : planning == .reused ? configuration.reusedPlansTransactionBegin : ["BEGIN"]
        return durability == .unflushed ? begin + [PostgresConfiguration.unflushedCommit] : begin
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
        if sentAhead != nil {
            // Only `replyOfSent` may use the session now; anything else would read that reply.
            // It ended on its own (BEGIN to COMMIT): no transaction of the caller's is cut short.
            sentAhead = nil
            session.close()
            inTransaction = false
            throw PostgresError(kind: .connectionLost, message: "a transaction sent ahead was never read: session closed")
        }
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

/// What `PostgresConnection.transaction(…sendingNext:)` and `replyOfSent` return: the statement's
/// rows, and what `sendingNext` gave with the transaction it sent ahead (nil: none went out).
public struct ChainedReply<Next: Sendable>: Sendable {
    public let rows: PostgresRows
    public let next: Next?
}

/// A pipeline sent on a session (the statements after BEGIN's are the caller's), kept while its
/// reply is unread.
private struct SentPipeline {
    let statements: [PostgresStatement]
    let names: [String?]
    var beginCount = 0
    var planning = TransactionPlanning.perRun
    var durability = CommitDurability.flushed
}

/// When and what to send ahead (`transaction(…sendingNext:)`): the statement for a reply's
/// number of rows, and what the caller gets back with it once it went out.
private struct SendAhead<Next>: Sendable {
    let planning: TransactionPlanning
    let durability: CommitDurability
    let next: @Sendable (Int) -> (statement: PostgresStatement, next: Next)?
}

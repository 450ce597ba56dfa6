import CLibPQ
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One libpq connection driven non-blocking: every wait is a `poll` on the socket bounded
/// by a deadline, so a peer that went silent costs one deadline, never a hung thread.
/// Not thread-safe: one thread uses it at a time (a connection's own thread, or the listener's).
final class LibpqSession {
    let configuration: PostgresConfiguration
    private(set) var handle: OpaquePointer?
    /// The server process id libpq was given differs from the one the server reports: a pooler
    /// (PgBouncer) sits in between, and session state cannot be relied on.
    private(set) var behindPooler = false
    /// Pipelines sent and not yet read to their Sync (`sendPipeline`): while any is, the session
    /// stays in pipeline mode and is not idle.
    private(set) var pipelinesUnread = 0

    /// Kept alive as long as any handle points at it.
    private let noticeReceiver: NoticeReceiver?
    /// Shared by the sessions of one pool: which host to try first, which last.
    private let hostPreference: HostPreference?

    init(configuration: PostgresConfiguration, hostPreference: HostPreference? = nil) {
        self.configuration = configuration
        self.hostPreference = hostPreference
        noticeReceiver = configuration.noticeHandler.map(NoticeReceiver.init(handler:))
    }

    deinit { close() }

    var isOpen: Bool { handle != nil && PQstatus(handle) == CONNECTION_OK }
    /// Connected, outside any transaction, and no reply on its way.
    var isIdle: Bool { isOpen && pipelinesUnread == 0 && PQtransactionStatus(handle) == PQTRANS_IDLE }
    var serverProcessID: Int32 { handle.map { PQbackendPID($0) } ?? 0 }

    // MARK: - Opening and closing

    /// Opens a new session: each host of the conninfo in turn (each resolved address of a
    /// name too), each with its own connect deadline, until one accepts (and matches
    /// `target_session_attrs`, which libpq checks per host). A hung first host costs one
    /// deadline, never the whole list; with a `HostPreference`, the host that accepted last
    /// goes first and one that just failed goes last, so it is not paid for on every reconnect.
    func open() throws {
        close()
        let hosts = ConnectTargets(conninfo: configuration.conninfo).hosts
        let multiHost = hosts.count > 1
        var failures: [PostgresError] = []
        for target in multiHost ? (hostPreference?.order(hosts) ?? hosts) : hosts {
            var deadline = Deadline(secondsFromNow: configuration.connectTimeout)
            var addresses: [String?] = [nil]
            if target.needsLookup {
                do { addresses = try HostLookup.shared.addresses(of: target.host, until: deadline) } catch let error as PostgresError {
                    failures.append(error)
                    if multiHost { hostPreference?.failed(target) }
                    continue
                }
            }
            for (index, address) in addresses.enumerated() {
                if index > 0 { deadline = Deadline(secondsFromNow: configuration.connectTimeout) }
                do {
                    try open(overrides: multiHost || address != nil ? target.overrides(address: address) : [], deadline: deadline)
                    if multiHost { hostPreference?.accepted(target, among: hosts) }
                    return
                } catch let error as PostgresError {
                    failures.append(multiHost ? error.prefixed("\(target.label): ") : error)
                }
            }
            if multiHost { hostPreference?.failed(target) }
        }
        throw Self.combined(failures)
    }

    /// One connect attempt; `overrides` pin it to one host of the list.
    private func open(overrides: [(String, String)], deadline: Deadline) throws {
        close()
        var pairs = configuration.connectionDefaults
        pairs.append(("dbname", configuration.conninfo)) // expanded: the user's values override the defaults above
        pairs += overrides
        handle = Self.start(pairs)
        guard let handle, PQstatus(handle) != CONNECTION_BAD else { throw failedToConnect() }
        // Before the handshake: the server may warn during it (collation versions).
        NoticeReceiver.install(noticeReceiver, on: handle)
        var polling = PGRES_POLLING_WRITING
        while polling != PGRES_POLLING_OK {
            switch polling {
            case PGRES_POLLING_READING: try wait(read: true, write: false, until: deadline, connecting: true)
            case PGRES_POLLING_WRITING: try wait(read: false, write: true, until: deadline, connecting: true)
            case PGRES_POLLING_FAILED: throw failedToConnect()
            default: break
            }
            polling = PQconnectPoll(handle)
        }
        guard PQsetnonblocking(handle, 1) == 0 else { throw failedToConnect() }
        do {
            let reported = try simpleQuery("SELECT pg_backend_pid()", deadline: deadline).first?.first.flatMap { try? $0.decode(Int32.self, at: 0) }
            behindPooler = reported != PQbackendPID(handle)
            if !behindPooler { _ = try simpleQuery(configuration.directSessionSetup, deadline: deadline) }
        } catch let error as PostgresError {
            close()
            if error.isTimeout { throw PostgresError(kind: .timedOut, message: "connect timed out after \(configuration.connectTimeout) s (session setup)") }
            throw PostgresError(kind: .connectionFailed, sqlState: error.sqlState, message: "cannot set up session: " + error.message)
        }
    }

    /// Every host failed: one error that names each host's reason; a timeout only when all timed out.
    private static func combined(_ failures: [PostgresError]) -> PostgresError {
        guard failures.count > 1 else {
            return failures.first ?? PostgresError(kind: .connectionFailed, message: "cannot connect: no host to try")
        }
        let kind: PostgresError.Kind = failures.allSatisfy(\.isTimeout) ? .timedOut : .connectionFailed
        return PostgresError(kind: kind, message: "cannot connect to any host: " + failures.map(\.message).joined(separator: "; "))
    }

    /// Ends the session politely (the terminate message is sent without waiting).
    func close() {
        if let handle { PQfinish(handle) }
        handle = nil
        pipelinesUnread = 0
    }

    /// Gives up on a session whose call ran past its deadline: asks the server to cancel
    /// what it runs (on the process's one canceller thread, and only when a backend exists)
    /// and closes the socket at once. The session is never used again.
    func abandon() {
        guard let handle else { return }
        CancelRequests.shared.enqueue(for: handle)
        close()
    }

    // MARK: - Calls

    /// Sends one command with `send` and hands every result to `each`, until libpq has no
    /// more. `each` owns the result and must clear it. The first server error is rethrown
    /// after all results were read, so the session stays in sync.
    func roundTrip(until deadline: Deadline, send: (OpaquePointer) -> Int32,
                   each: (OpaquePointer) throws -> Void) throws {
        guard let handle else { throw PostgresError(kind: .connectionLost, message: "no connection") }
        guard send(handle) == 1 else { throw lostOrFailed() }
        try flush(until: deadline)
        var firstError: Error?
        while let result = try nextResult(until: deadline) {
            if let refused = try endCopy(result, until: deadline) {
                firstError = firstError ?? refused
                continue
            }
            do { try each(result) } catch { firstError = firstError ?? error }
        }
        if let firstError { throw firstError }
    }

    /// Queues the commands and a Sync and sends them (libpq pipeline mode): one round trip for
    /// all of them, their results read by `readPipeline`. More may be sent before the reply of the
    /// last is read: the server runs them in order. A failure to queue a command leaves the
    /// session in an unknown state: it is closed.
    func sendPipeline(_ sends: [(OpaquePointer) -> Int32], until deadline: Deadline) throws {
        guard let handle else { throw PostgresError(kind: .connectionLost, message: "no connection") }
        guard PQenterPipelineMode(handle) == 1 else { throw lostOrFailed() }
        for send in sends where send(handle) != 1 {
            let error = lostOrFailed()
            close()
            throw PostgresError(kind: .connectionLost, message: "cannot queue a pipelined statement: " + error.message)
        }
        guard PQpipelineSync(handle) == 1 else {
            let error = lostOrFailed()
            close()
            throw PostgresError(kind: .connectionLost, message: "cannot end a pipeline: " + error.message)
        }
        pipelinesUnread += 1
        try flush(until: deadline)
    }

    /// Reads the oldest pipeline sent (`sendPipeline`, of `commands` commands) to its Sync,
    /// handing each command's results to `each` with the command's index. After a server error
    /// the server skips the rest until the Sync; the first error is rethrown once the Sync was
    /// read, so the session stays in step. Pipeline mode ends when no other is on its way.
    func readPipeline(commands: Int, until deadline: Deadline, each: (Int, OpaquePointer) throws -> Void) throws {
        guard let handle else { throw PostgresError(kind: .connectionLost, message: "no connection") }
        var firstError: Error?
        for index in 0..<commands {
            while let result = try nextResult(until: deadline) {
                if PQresultStatus(result) == PGRES_PIPELINE_ABORTED {
                    PQclear(result) // skipped after an earlier error, which says why
                    continue
                }
                if let refused = try endCopy(result, until: deadline) {
                    firstError = firstError ?? refused
                    continue
                }
                do { try each(index, result) } catch { firstError = firstError ?? error }
            }
        }
        guard let sync = try nextResult(until: deadline) else { throw lostOrFailed() }
        let synced = PQresultStatus(sync) == PGRES_PIPELINE_SYNC
        PQclear(sync)
        pipelinesUnread -= 1
        guard synced, pipelinesUnread > 0 || PQexitPipelineMode(handle) == 1 else {
            close()
            throw PostgresError(kind: .connectionLost, message: "pipeline out of step with the server")
        }
        if let firstError { throw firstError }
    }

    /// A COPY begun by a statement sent as a query: libpq would hand back the same COPY
    /// result for ever, a loop that never waits and so never meets its deadline. COPY IN is
    /// ended at once with an error (the server rolls it back), COPY OUT is read to its end and
    /// dropped, COPY BOTH (replication) closes the session. Returns the error to report, after
    /// clearing `result`; nil (result untouched) for any other result.
    private func endCopy(_ result: OpaquePointer, until deadline: Deadline) throws -> PostgresError? {
        let status = PQresultStatus(result)
        guard status == PGRES_COPY_IN || status == PGRES_COPY_OUT || status == PGRES_COPY_BOTH else { return nil }
        PQclear(result)
        let refusal = PostgresError(kind: .client, message: "COPY is not supported by query or execute (use copyIn)")
        guard let handle else { throw PostgresError(kind: .connectionLost, message: "no connection") }
        switch status {
        case PGRES_COPY_IN:
            while true {
                let sent = PQputCopyEnd(handle, "COPY is not supported here")
                if sent == 1 { break }
                if sent < 0 { throw lostOrFailed() }
                try wait(read: false, write: true, until: deadline)
            }
            try flush(until: deadline)
        case PGRES_COPY_OUT:
            while true {
                var buffer: UnsafeMutablePointer<CChar>?
                let length = PQgetCopyData(handle, &buffer, 1)
                if let buffer { PQfreemem(buffer) }
                if length > 0 { continue }
                if length == -1 { break }
                if length < -1 { throw lostOrFailed() }
                try wait(read: true, write: false, until: deadline)
                guard PQconsumeInput(handle) == 1 else { throw lostOrFailed() }
            }
        default:
            close()
            throw PostgresError(kind: .connectionLost, message: "COPY BOTH is not supported: session closed")
        }
        return refusal
    }

    /// A script of statements with the simple protocol; rows of the last result that has any.
    @discardableResult
    func simpleQuery(_ sql: String, deadline: Deadline) throws -> [PostgresRows] {
        var all: [PostgresRows] = []
        try roundTrip(until: deadline, send: { PQsendQuery($0, sql) }, each: { all.append(try consume($0)) })
        return all
    }

    /// Waits for the next result; nil when the command is complete.
    func nextResult(until deadline: Deadline) throws -> OpaquePointer? {
        guard let handle else { throw PostgresError(kind: .connectionLost, message: "no connection") }
        while PQisBusy(handle) == 1 {
            try wait(read: true, write: false, until: deadline)
            guard PQconsumeInput(handle) == 1 else { throw lostOrFailed() }
        }
        return PQgetResult(handle)
    }

    /// Pushes libpq's output buffer to the socket, reading while it waits as libpq asks.
    func flush(until deadline: Deadline) throws {
        guard let handle else { throw PostgresError(kind: .connectionLost, message: "no connection") }
        while true {
            let pending = PQflush(handle)
            if pending == 0 { return }
            if pending < 0 { throw lostOrFailed() }
            if try wait(read: true, write: true, until: deadline).readable, PQconsumeInput(handle) != 1 { throw lostOrFailed() }
        }
    }

    /// Sends COPY data, waiting for room in the socket when libpq's buffer is full.
    func putCopyData(_ chunk: UnsafeBufferPointer<CChar>, until deadline: Deadline) throws {
        guard let handle else { throw PostgresError(kind: .connectionLost, message: "no connection") }
        while true {
            let status = PQputCopyData(handle, chunk.baseAddress, Int32(chunk.count))
            if status == 1 { return }
            if status < 0 { throw lostOrFailed() }
            try wait(read: false, write: true, until: deadline)
            if PQflush(handle) < 0 { throw lostOrFailed() }
        }
    }

    func putCopyEnd(until deadline: Deadline) throws {
        guard let handle else { throw PostgresError(kind: .connectionLost, message: "no connection") }
        while true {
            let status = PQputCopyEnd(handle, nil)
            if status == 1 { return try flush(until: deadline) }
            if status < 0 { throw lostOrFailed() }
            try wait(read: false, write: true, until: deadline)
        }
    }

    /// Reads whatever the server sent unasked (notifications) without waiting.
    func consumeAvailableInput() throws {
        guard let handle, PQconsumeInput(handle) == 1 else { throw lostOrFailed() }
    }

    var socket: Int32 { handle.map { PQsocket($0) } ?? -1 }

    // MARK: - Waiting

    @discardableResult
    private func wait(read: Bool, write: Bool, until deadline: Deadline, connecting: Bool = false) throws -> (readable: Bool, writable: Bool) {
        let descriptor = socket
        guard descriptor >= 0 else { throw lostOrFailed() }
        var events: Int16 = 0
        if read { events |= Int16(POLLIN) }
        if write { events |= Int16(POLLOUT) }
        while true {
            let remaining = deadline.remainingMilliseconds
            if remaining == 0 {
                throw PostgresError(kind: .timedOut,
                                    message: connecting ? "connect timed out after \(configuration.connectTimeout) s"
                                                        : "database call timed out after \(configuration.callTimeout) s")
            }
            var entry = pollfd(fd: descriptor, events: events, revents: 0)
            let ready = poll(&entry, 1, remaining)
            if ready < 0 {
                if errno == EINTR { continue }
                throw PostgresError(kind: .connectionLost, message: "poll: " + String(cString: strerror(errno)))
            }
            if ready == 0 { continue }
            let failed = entry.revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0
            return (entry.revents & Int16(POLLIN) != 0 || failed, entry.revents & Int16(POLLOUT) != 0 || failed)
        }
    }

    // MARK: - Results and errors

    /// Copies a result out and frees it, or turns it into an error (also freeing it).
    func consume(_ result: OpaquePointer) throws -> PostgresRows {
        defer { PQclear(result) }
        switch PQresultStatus(result) {
        case PGRES_TUPLES_OK, PGRES_SINGLE_TUPLE:
            let rowCount = Int(PQntuples(result))
            let columnCount = Int(PQnfields(result))
            let columns = (0..<columnCount).map { String(cString: PQfname(result, Int32($0))) }
            let cells = rowCount * columnCount
            var starts: [Int32] = [], counts: [Int32] = []
            starts.reserveCapacity(cells)
            counts.reserveCapacity(cells)
            var size = 0
            for row in 0..<Int32(rowCount) {
                for column in 0..<Int32(columnCount) {
                    // Only an empty cell may be NULL: one call per cell instead of two for the rest.
                    var length = Int(PQgetlength(result, row, column))
                    if length == 0 && PQgetisnull(result, row, column) != 0 { length = -1 }
                    starts.append(Int32(size))
                    counts.append(Int32(length))
                    size += max(0, length)
                }
            }
            // Cells of a result are limited to 1 GB each, but not their sum: past Int32 offsets, refuse.
            guard size <= Int(Int32.max) else { throw PostgresError(kind: .client, message: "a result of \(size) bytes is too large") }
            let bytes = [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
                var cell = 0
                for row in 0..<Int32(rowCount) {
                    for column in 0..<Int32(columnCount) {
                        defer { cell += 1 }
                        let length = Int(counts[cell])
                        guard length > 0, let value = PQgetvalue(result, row, column) else { continue }
                        value.withMemoryRebound(to: UInt8.self, capacity: length) {
                            (buffer.baseAddress! + Int(starts[cell])).initialize(from: $0, count: length)
                        }
                    }
                }
                initialized = size
            }
            return PostgresRows(columns: columns, bytes: bytes, starts: starts, counts: counts,
                                rowCount: rowCount, affectedRows: rowCount)
        case PGRES_COMMAND_OK, PGRES_EMPTY_QUERY, PGRES_COPY_IN, PGRES_COPY_OUT:
            let affected = Int(String(cString: PQcmdTuples(result))) ?? 0
            return PostgresRows(affectedRows: affected, commandTag: String(cString: PQcmdStatus(result)))
        default:
            throw error(from: result)
        }
    }

    private func error(from result: OpaquePointer) -> PostgresError {
        func field(_ code: Int32) -> String? {
            PQresultErrorField(result, code).map { String(cString: $0) }
        }
        let sqlState = field(Int32(UInt8(ascii: "C"))) // PG_DIAG_SQLSTATE
        // A FATAL ends the session (a terminated backend, a server shutting down). Arriving while
        // the session is idle, libpq hands it to the notice receiver; arriving during a call (a
        // listener's health check, say), it is only this call's error, which callers may retry
        // in silence: the server's words reach the notice receiver either way.
        if let severity = field(Int32(UInt8(ascii: "V"))), severity == "FATAL" || severity == "PANIC" {
            noticeReceiver?.handler(PostgresNotice(result: result))
        }
        let message = field(Int32(UInt8(ascii: "M"))) ?? Self.oneLine(String(cString: PQresultErrorMessage(result)))
        let detail = field(Int32(UInt8(ascii: "D")))
        if sqlState == nil, !isOpen {
            return PostgresError(kind: .connectionLost, message: Self.oneLine(message))
        }
        return PostgresError(kind: isOpen ? .server : .connectionLost, sqlState: sqlState, message: message, detail: detail)
    }

    func lostOrFailed() -> PostgresError {
        let message = handle.map { Self.oneLine(String(cString: PQerrorMessage($0))) } ?? "no connection"
        if !isOpen {
            return PostgresError(kind: .connectionLost, message: message.isEmpty ? "connection lost" : message)
        }
        return PostgresError(kind: .client, message: message)
    }

    private func failedToConnect() -> PostgresError {
        let message = handle.map { String(cString: PQerrorMessage($0)) } ?? "out of memory"
        close()
        return PostgresError(kind: .connectionFailed, message: "cannot connect: " + Self.oneLine(message))
    }

    private static func start(_ pairs: [(String, String)]) -> OpaquePointer? {
        let keywords = pairs.map { strdup($0.0) }
        let values = pairs.map { strdup($0.1) }
        defer {
            keywords.forEach { free($0) }
            values.forEach { free($0) }
        }
        let keywordArray = keywords.map { UnsafePointer<CChar>($0) } + [nil]
        let valueArray = values.map { UnsafePointer<CChar>($0) } + [nil]
        return PQconnectStartParams(keywordArray, valueArray, 1)
    }

    static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
    }
}

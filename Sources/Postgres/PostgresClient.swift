import Synchronization

/// A small connection pool. Connections open lazily up to `maxConnections`; broken
/// ones are dropped and replaced, so a server restart heals by itself.
public final class PostgresClient: Sendable {
    private struct State {
        var idle: [PostgresConnection] = []
        var open = 0
        /// Each waiter gets either an idle connection or, with `nil`, a slot to open one.
        var waiters: [CheckedContinuation<PostgresConnection?, Never>] = []
        var closed = false
    }

    public let configuration: PostgresConfiguration
    public let maxConnections: Int
    private let state = Mutex(State())
    private let lostConnections = Atomic<Int>(0)
    private let openedSessions = Atomic<Int>(0)
    /// Which host of a multi-host URL this pool's sessions try first, and which last.
    let hostPreference: HostPreference

    /// How many connections were dropped because they broke (lost, timed out, or left a
    /// transaction broken). A change tells a caller the pool has reconnected since it last
    /// looked, e.g. the queue worker, which then hands back leases it may have orphaned.
    public var brokenConnectionCount: Int { lostConnections.load(ordering: .relaxed) }

    /// How many sessions this pool has opened. Unchanged between two moments means every
    /// statement in between ran on a session that already existed: on the same server as before,
    /// so no commit acknowledged in between was lost to a failover (the queue worker then drops a
    /// claim's lease row without re-reading its jobs).
    public var sessionsOpened: Int { openedSessions.load(ordering: .sequentiallyConsistent) }

    public var conninfo: String { configuration.conninfo }

    public convenience init(conninfo: String, maxConnections: Int = 4, applicationName: String = "receipt-worker") {
        self.init(configuration: PostgresConfiguration(conninfo: conninfo, applicationName: applicationName),
                  maxConnections: maxConnections)
    }

    /// At most `maxConnections` sessions are ever open at once, whatever the load: callers
    /// beyond that wait for one to come back.
    public init(configuration: PostgresConfiguration, maxConnections: Int = 4) {
        self.configuration = configuration
        self.maxConnections = max(1, maxConnections)
        hostPreference = HostPreference(configuration: configuration)
    }

    /// Open connections, and how many of them are checked out (`iap_db_connections`).
    public var connectionCounts: (idle: Int, busy: Int) {
        state.withLock { ($0.idle.count, $0.open - $0.idle.count) }
    }

    /// Checks a connection out for `body` and back in afterwards.
    public func withConnection<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        let connection = try await lease()
        do {
            let value = try await body(connection)
            await giveBack(connection)
            return value
        } catch {
            await giveBack(connection)
            throw error
        }
    }

    /// One autocommit statement. Retried once on a fresh connection if the old one was
    /// found dead (server restart); callers only send statements that are safe to repeat.
    public func query(_ sql: String, _ binds: [any PostgresEncodable] = []) async throws -> PostgresRows {
        try await retryingOnceIfLost { try await withConnection { try await $0.query(sql, binds) } }
    }

    /// One statement alone in a transaction whose BEGIN, settings and COMMIT travel with it (one
    /// round trip): with `.reused`, planned once per session instead of for every run. Retried
    /// like `query`.
    public func query(_ statement: PostgresStatement, planning: TransactionPlanning,
                      durability: CommitDurability = .flushed) async throws -> PostgresRows {
        try await retryingOnceIfLost {
            try await withConnection { connection in
                try await connection.transaction(planning: planning, durability: durability, committing: [statement])[0]
            }
        }
    }

    private func retryingOnceIfLost<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as PostgresError where error.isConnectionLost {
            return try await body()
        }
    }

    public func query(_ sql: String, _ binds: any PostgresEncodable...) async throws -> PostgresRows {
        try await query(sql, binds)
    }

    public func transaction<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await withConnection { try await $0.transaction(body) }
    }

    /// Closes idle connections and refuses new leases.
    public func close() async {
        let idle = state.withLock { state -> [PostgresConnection] in
            state.closed = true
            defer { state.idle.removeAll() }
            state.open -= state.idle.count
            return state.idle
        }
        for connection in idle { await connection.close() }
    }

    private func lease() async throws -> PostgresConnection {
        enum Next { case use(PostgresConnection), openNew, wait, closed }
        let next = state.withLock { state -> Next in
            if state.closed { return .closed }
            if let connection = state.idle.popLast() { return .use(connection) }
            if state.open < maxConnections {
                state.open += 1
                return .openNew
            }
            return .wait
        }
        switch next {
        case .use(let connection): return connection
        case .closed: throw PostgresError(kind: .client, message: "database client is closed")
        case .openNew: return try await openCountedConnection()
        case .wait:
            let handed = await withCheckedContinuation { continuation in
                let immediate = state.withLock { state -> Next? in
                    if let connection = state.idle.popLast() { return .use(connection) }
                    if state.open < maxConnections {
                        state.open += 1
                        return .openNew
                    }
                    state.waiters.append(continuation)
                    return nil
                }
                switch immediate {
                case .use(let connection)?: continuation.resume(returning: connection)
                case .openNew?: continuation.resume(returning: nil)
                default: break
                }
            }
            if let handed { return handed }
            return try await openCountedConnection()
        }
    }

    /// Opens a connection for a slot already counted in `open`; frees the slot on failure.
    private func openCountedConnection() async throws -> PostgresConnection {
        do {
            let connection = try await PostgresConnection.connect(configuration, hostPreference: hostPreference)
            openedSessions.add(1, ordering: .sequentiallyConsistent)
            return connection
        } catch {
            releaseSlot()
            throw error
        }
    }

    private func giveBack(_ connection: PostgresConnection) async {
        if !connection.isReusable {
            lostConnections.add(1, ordering: .relaxed)
            // The idle ones lead to the same server and are most likely broken too (a hung or
            // failed-over primary): each would cost a whole call deadline to find out, one after
            // the other. New sessions cost milliseconds where the server is well.
            let stale = state.withLock { state -> [PostgresConnection] in
                defer { state.idle.removeAll() }
                state.open -= state.idle.count
                return state.idle
            }
            for idle in stale { await idle.close() }
            await connection.close()
            releaseSlot() // (no one waits while connections sit idle)
            return
        }
        enum Next { case handTo(CheckedContinuation<PostgresConnection?, Never>), keep, close }
        let next = state.withLock { state -> Next in
            // Returned after close(): nobody will lease it again, so it must not stay open.
            if state.closed {
                state.open -= 1
                return .close
            }
            if !state.waiters.isEmpty { return .handTo(state.waiters.removeFirst()) }
            state.idle.append(connection)
            return .keep
        }
        switch next {
        case .handTo(let waiter): waiter.resume(returning: connection)
        case .close: await connection.close()
        case .keep: break
        }
    }

    private func releaseSlot() {
        let waiter = state.withLock { state -> CheckedContinuation<PostgresConnection?, Never>? in
            if !state.waiters.isEmpty { return state.waiters.removeFirst() } // the slot passes on
            state.open -= 1
            return nil
        }
        waiter?.resume(returning: nil)
    }
}

import Foundation

/// How the process talks to PostgreSQL: deadlines, prepared statements, and the
/// session settings that let either side drop a connection whose peer vanished.
public struct PostgresConfiguration: Sendable {
    /// Whether statements are prepared once per session under a name (`rw_N`).
    public enum PreparedStatements: String, Sendable, CaseIterable {
        /// On for a direct connection; off when the session turns out to be behind a pooler.
        case auto
        case on
        case off
    }

    /// libpq URL (`postgresql://…`) or key=value conninfo; its own values win over our defaults.
    public var conninfo: String
    public var applicationName: String
    /// Deadline of every statement, COPY or health check; past it the connection is abandoned.
    /// `.infinity`: none (`migrate`: an index build takes as long as it takes).
    public var callTimeout: Double = 30
    /// Deadline of opening a connection (TCP, TLS, authentication, session setup), per host
    /// of a multi-host URL, as libpq's `connect_timeout`.
    public var connectTimeout: Double = 10
    public var preparedStatements = PreparedStatements.auto
    /// The server ends a session left idle inside a transaction this long, releasing its row locks.
    public var idleInTransactionTimeout: Double = 10
    /// Told about every call's result (`iap_db_calls_total`).
    public var observer: (any PostgresCallObserver)?
    /// Told what the server says (NOTICE, WARNING, ...) from the first moment of every
    /// session; nil drops it. libpq would otherwise print it raw on stderr.
    public var noticeHandler: (@Sendable (PostgresNotice) -> Void)?
    /// Told when a pool (or listener) of a multi-host conninfo starts opening its sessions on
    /// another host first: the one that accepted the latest session.
    public var preferredHostHandler: (@Sendable (PostgresPreferredHost) -> Void)?

    public init(conninfo: String, applicationName: String = "receipt-worker") {
        self.conninfo = conninfo
        self.applicationName = applicationName
    }

    /// Conninfo keywords put *before* the user's conninfo, so any value the user gave wins:
    /// TCP keepalives and `tcp_user_timeout` notice a peer that vanished without FIN or RST.
    var connectionDefaults: [(String, String)] {
        [
            ("application_name", applicationName.filter { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }),
            ("keepalives", "1"),
            ("keepalives_idle", "15"),
            ("keepalives_interval", "5"),
            ("keepalives_count", "3"),
            ("tcp_user_timeout", String(Self.milliseconds(transportTimeout))),
        ]
    }

    /// Session-level settings for a direct connection (never sent through a pooler, where a
    /// session's settings would leak to other clients): fixed text formats for decoding, the
    /// idle-in-transaction limit, and server-side keepalives so the server drops us too.
    ///
    /// `plan_cache_mode = force_custom_plan`: a prepared statement is parsed once but planned
    /// for the parameters of each run. Left to itself PostgreSQL settles after five runs on a
    /// generic plan, and for a lookup by a set of keys (`= ANY($1)`) prepared while a table was
    /// small that plan is a sequential scan, kept until autovacuum analyzes the table: every
    /// batch then reads the whole growing ledger. On the hot path custom plans cost about what
    /// generic ones do, the same as unnamed statements, which are what a transaction pooler gets
    /// anyway.
    ///
    /// `jit = off`: PostgreSQL compiles a statement whose estimated cost passes `jit_above_cost`,
    /// a quarter to half a second of the server's CPU before it runs. Every statement here is
    /// short or reads a bounded slice; an estimate inflated by a correlated subquery (charged for
    /// every row it might run for) was enough to compile a 20 ms search on every run.
    var directSessionSetup: String {
        "SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'; SET IntervalStyle = 'postgres'; "
            + "SET idle_in_transaction_session_timeout = \(Self.milliseconds(idleInTransactionTimeout)); "
            + "SET tcp_keepalives_idle = 15; SET tcp_keepalives_interval = 5; SET tcp_keepalives_count = 3; "
            + "SET tcp_user_timeout = \(Self.milliseconds(transportTimeout)); "
            + "SET plan_cache_mode = force_custom_plan; SET jit = off"
    }

    /// What a transaction of fixed-shape statements starts with on a direct session: each
    /// prepared statement keeps one plan for the session instead of being planned for every run
    /// (planning is a large share of a small batch's statement time), and that plan is made with
    /// sequential scans priced out, so one first made while a table was empty is still an index
    /// lookup after the table grew (the reason sessions otherwise plan every run, above).
    var reusedPlansTransactionBegin: [String] {
        ["BEGIN", "SET LOCAL plan_cache_mode = force_generic_plan", "SET LOCAL enable_seqscan = off"]
    }

    /// What a transaction whose COMMIT does not wait for the flush adds to its beginning.
    static let unflushedCommit = "SET LOCAL synchronous_commit = off"

    /// What a transaction starts with behind a pooler: the same limits, scoped to the transaction
    /// (separate statements: they travel in one pipeline with the transaction's first statement).
    var pooledTransactionBegin: [String] {
        ["BEGIN", "SET LOCAL idle_in_transaction_session_timeout = \(Self.milliseconds(idleInTransactionTimeout))",
         "SET LOCAL TimeZone = 'UTC'"]
    }

    /// How long sent data may stay unacknowledged before the kernel drops the connection: the
    /// call deadline, or 30 s when calls have none (keepalives and this still find a dead peer).
    var transportTimeout: Double { callTimeout.isFinite && callTimeout < 86_400 ? max(1, callTimeout) : 30 }

    /// Whole milliseconds of a setting we computed (never user text), at least 1.
    static func milliseconds(_ seconds: Double) -> Int { max(1, Int((seconds * 1000).rounded())) }
}

/// Receives the result of every database call, for metrics.
public protocol PostgresCallObserver: Sendable {
    func databaseCallFinished(_ result: PostgresCallResult)
}

public enum PostgresCallResult: String, Sendable {
    case ok, error, timeout
}

/// One configuration setting: its environment variable (as docs/reference.md lists it), its flag,
/// how its value is checked, and its default.
struct Setting: Sendable {
    enum Kind: Sendable {
        case text
        case url
        case wholeNumber(ClosedRange<Int>)
        case seconds(ClosedRange<Double>)       // decimal seconds, "0.2" is valid
        case boolean
        case secondsList                         // "1,5,10,100,600"
        case choice([String])
        case listenAddress(allowOff: Bool)       // host:port, or "off"
        case filePath
        case fileList                            // comma-separated paths
    }

    let env: String
    let flag: String
    let kind: Kind
    let defaultValue: String?
    let help: String
    /// Never printed: not in errors, not in logs.
    var secret = false
}

/// Every setting the program knows. Commands pick the ones they accept.
enum Settings {
    static let databaseURL = Setting(env: "DATABASE_URL", flag: "database-url", kind: .text, defaultValue: nil,
                                     help: "libpq URL or conninfo of the PostgreSQL database", secret: true)
    static let migrationsDir = Setting(env: "MIGRATIONS_DIR", flag: "migrations", kind: .filePath, defaultValue: nil,
                                       help: "folder of NNNN_name.sql files (default: ./Migrations, or the one beside the binary)")
    static let bundleID = Setting(env: "APPLE_BUNDLE_ID", flag: "bundle-id", kind: .text, defaultValue: nil,
                                  help: "the app's bundle id; receipts for another bundle are rejected")
    static let appID = Setting(env: "APPLE_APP_ID", flag: "app-id", kind: .wholeNumber(0...Int.max), defaultValue: nil,
                               help: "the app's Apple id (checked on production notifications)")
    static let sharedSecret = Setting(env: "APPLE_SHARED_SECRET", flag: "shared-secret", kind: .text, defaultValue: nil,
                                      help: "App Store shared secret sent to verifyReceipt", secret: true)
    static let sharedSecretFile = Setting(env: "APPLE_SHARED_SECRET_FILE", flag: "shared-secret-file", kind: .filePath,
                                          defaultValue: nil, help: "file holding the shared secret")
    static let allowSandbox = Setting(env: "APPLE_ALLOW_SANDBOX", flag: "allow-sandbox", kind: .boolean, defaultValue: "false",
                                      help: "accept sandbox receipts (never in production: they cost nothing)")
    static let verifyReceiptURL = Setting(env: "APPLE_VERIFY_RECEIPT_URL", flag: "verify-receipt-url", kind: .url,
                                          defaultValue: "https://buy.itunes.apple.com/verifyReceipt", help: "verifyReceipt production endpoint")
    static let verifyReceiptSandboxURL = Setting(env: "APPLE_VERIFY_RECEIPT_SANDBOX_URL", flag: "verify-receipt-sandbox-url", kind: .url,
                                                 defaultValue: "https://sandbox.itunes.apple.com/verifyReceipt", help: "verifyReceipt sandbox endpoint")
    static let appStoreAPIURL = Setting(env: "APPSTORE_API_URL", flag: "appstore-api-url", kind: .url,
                                        defaultValue: "https://api.storekit.itunes.apple.com", help: "App Store Server API (production)")
    static let appStoreAPISandboxURL = Setting(env: "APPSTORE_API_SANDBOX_URL", flag: "appstore-api-sandbox-url", kind: .url,
                                               defaultValue: "https://api.storekit-sandbox.itunes.apple.com", help: "App Store Server API (sandbox)")
    static let issuerID = Setting(env: "APPSTORE_ISSUER_ID", flag: "issuer-id", kind: .text, defaultValue: nil, help: "App Store Connect API issuer id")
    static let keyID = Setting(env: "APPSTORE_KEY_ID", flag: "key-id", kind: .text, defaultValue: nil, help: "App Store Connect API key id")
    static let privateKeyFile = Setting(env: "APPSTORE_PRIVATE_KEY_FILE", flag: "private-key-file", kind: .filePath, defaultValue: nil,
                                        help: "App Store Connect API private key (.p8)")
    // App Store Connect API (Sales and Trends): a team key with the Sales role, not the in-app purchase key above.
    static let connectAPIURL = Setting(env: "APPSTORECONNECT_API_URL", flag: "appstoreconnect-api-url", kind: .url,
                                       defaultValue: "https://api.appstoreconnect.apple.com", help: "App Store Connect API (sales reports)")
    static let connectIssuerID = Setting(env: "APPSTORECONNECT_ISSUER_ID", flag: "appstoreconnect-issuer-id", kind: .text, defaultValue: nil,
                                         help: "App Store Connect API team key's issuer id")
    static let connectKeyID = Setting(env: "APPSTORECONNECT_KEY_ID", flag: "appstoreconnect-key-id", kind: .text, defaultValue: nil,
                                      help: "App Store Connect API team key id")
    static let connectPrivateKeyFile = Setting(env: "APPSTORECONNECT_PRIVATE_KEY_FILE", flag: "appstoreconnect-private-key-file", kind: .filePath,
                                               defaultValue: nil, help: "App Store Connect API team private key (.p8), Sales role")
    static let connectVendorNumber = Setting(env: "APPSTORECONNECT_VENDOR_NUMBER", flag: "appstoreconnect-vendor-number", kind: .text,
                                             defaultValue: nil, help: "vendor number of the Sales and Trends reports")
    static let appStoreRatePerSecond = Setting(env: "APPSTORE_API_RATE_PER_SECOND", flag: "appstore-rate-per-second", kind: .wholeNumber(1...10_000),
                                               defaultValue: "20", help: "App Store Server API requests per second, for the whole fleet, per endpoint family")
    static let appStoreRatePerHour = Setting(env: "APPSTORE_API_RATE_PER_HOUR", flag: "appstore-rate-per-hour", kind: .wholeNumber(1...10_000_000),
                                             defaultValue: "50000", help: "App Store Server API requests per hour, for the whole fleet, per endpoint family")
    static let historyInterval = Setting(env: "NOTIFICATION_HISTORY_INTERVAL_SECONDS", flag: "notification-history-interval",
                                         kind: .seconds(0...31_536_000), defaultValue: "3600",
                                         help: "how often the leader pulls notifications Apple failed to deliver (0 disables)")
    static let refundPreference = Setting(env: "REFUND_PREFERENCE", flag: "refund-preference",
                                          kind: .choice(["none", "decline", "grant_full", "grant_prorated"]), defaultValue: "none",
                                          help: "refundPreference sent with consumption answers (none sends none)")
    static let rootCerts = Setting(env: "APPLE_ROOT_CERTS", flag: "root-certs", kind: .fileList, defaultValue: nil,
                                   help: "comma-separated PEM/DER root certificates (default: bundled Apple Root CA - G3)")
    static let workerConcurrency = Setting(env: "WORKER_CONCURRENCY", flag: "concurrency", kind: .wholeNumber(1...100_000), defaultValue: "64",
                                           help: "jobs verified at once by this process")
    static let claimBatch = Setting(env: "CLAIM_BATCH", flag: "claim-batch", kind: .wholeNumber(1...10_000), defaultValue: "100",
                                    help: "most jobs claimed by one statement")
    static let leaseSeconds = Setting(env: "LEASE_SECONDS", flag: "lease", kind: .seconds(1...86_400), defaultValue: "60",
                                      help: "how long a claim is held before another worker may take the job")
    static let appleTimeout = Setting(env: "APPLE_TIMEOUT_SECONDS", flag: "apple-timeout", kind: .seconds(0.05...600), defaultValue: "15",
                                      help: "per-request deadline for Apple (Apple takes 3-6 s on a good day)")
    static let retryBase = Setting(env: "RETRY_BASE_SECONDS", flag: "retry-base", kind: .seconds(0...86_400), defaultValue: "1",
                                   help: "exponential backoff base (full jitter)")
    static let retryCap = Setting(env: "RETRY_CAP_SECONDS", flag: "retry-cap", kind: .seconds(0...86_400), defaultValue: "600",
                                  help: "exponential backoff cap")
    static let retrySchedule = Setting(env: "RETRY_SCHEDULE", flag: "retry-schedule", kind: .secondsList, defaultValue: nil,
                                       help: "explicit delays instead of backoff, e.g. 1,5,10,100,600")
    static let maxAttempts = Setting(env: "MAX_ATTEMPTS", flag: "max-attempts", kind: .wholeNumber(1...1_000), defaultValue: "6",
                                     help: "attempts in one round before a job is timed_out")
    static let sweepInterval = Setting(env: "SWEEP_INTERVAL_SECONDS", flag: "sweep-interval", kind: .seconds(0.05...86_400), defaultValue: "300",
                                       help: "how often timed_out jobs are re-queued")
    static let stuckAfter = Setting(env: "STUCK_AFTER_SECONDS", flag: "stuck-after", kind: .seconds(1...31_536_000), defaultValue: "86400",
                                    help: "unfinished jobs older than this raise stuck_verification")
    static let alertRepeat = Setting(env: "ALERT_REPEAT_SECONDS", flag: "alert-repeat", kind: .seconds(1...31_536_000), defaultValue: "3600",
                                     help: "open alerts are emitted again this often")
    static let alertWebhookURL = Setting(env: "ALERT_WEBHOOK_URL", flag: "alert-webhook-url", kind: .url, defaultValue: nil,
                                         help: "POST alerts here as JSON (optional)", secret: true)
    static let retentionDays = Setting(env: "RETENTION_DAYS", flag: "retention-days", kind: .seconds(0.001...36_500), defaultValue: "30",
                                       help: "finished jobs are deleted after this many days (attention jobs and open alerts never)")
    static let witnessRetention = Setting(env: "COMMIT_WITNESS_RETENTION_SECONDS", flag: "commit-witness-retention",
                                          kind: .seconds(3_600...31_536_000), defaultValue: "604800",
                                          help: "how long commit witnesses are kept; a lost COMMIT reply older than half of it is resolved by the jobs' own state")
    static let shutdownGrace = Setting(env: "SHUTDOWN_GRACE_SECONDS", flag: "shutdown-grace", kind: .seconds(0...3_600), defaultValue: "25",
                                       help: "on SIGTERM, how long in-flight jobs may finish before they are released")
    static let metricsListen = Setting(env: "METRICS_LISTEN", flag: "metrics-listen", kind: .listenAddress(allowOff: true),
                                       defaultValue: "127.0.0.1:9464", help: "/metrics, /healthz, /readyz address, or off")
    static let ingestListen = Setting(env: "INGEST_LISTEN", flag: "listen", kind: .listenAddress(allowOff: false),
                                      defaultValue: "127.0.0.1:8080", help: "ingest HTTP API address")
    static let ingestToken = Setting(env: "INGEST_TOKEN", flag: "ingest-token", kind: .text, defaultValue: nil,
                                     help: "bearer token the web tier sends to the ingest API", secret: true)
    static let ingestTokenFile = Setting(env: "INGEST_TOKEN_FILE", flag: "ingest-token-file", kind: .filePath, defaultValue: nil,
                                         help: "file holding the ingest token")
    static let maxBody = Setting(env: "INGEST_MAX_BODY", flag: "max-body", kind: .wholeNumber(1_024...1_073_741_824), defaultValue: "4194304",
                                 help: "largest accepted request body in bytes")
    static let logFormat = Setting(env: "LOG_FORMAT", flag: "log-format", kind: .choice(["logfmt", "json"]), defaultValue: "logfmt",
                                   help: "log line format")
    static let logLevel = Setting(env: "LOG_LEVEL", flag: "log-level", kind: .choice(["debug", "info", "notice", "warning", "error"]),
                                  defaultValue: "info", help: "lowest level logged")
    static let consoleListen = Setting(env: "CONSOLE_LISTEN", flag: "listen", kind: .listenAddress(allowOff: false),
                                       defaultValue: "127.0.0.1:8090", help: "support console address")
    static let consoleTrustedHeader = Setting(env: "CONSOLE_TRUSTED_HEADER", flag: "trusted-header", kind: .text, defaultValue: nil,
                                              help: "SSO mode: the header naming the console user, e.g. X-Forwarded-Email (no password form)")
    static let consoleTrustedProxy = Setting(env: "CONSOLE_TRUSTED_PROXY", flag: "trusted-proxy", kind: .text, defaultValue: nil,
                                             help: "comma-separated proxy addresses or CIDR ranges (10.0.0.0/8) whose X-Forwarded-For (and CONSOLE_TRUSTED_HEADER) is believed")
    static let consoleSessionSeconds = Setting(env: "CONSOLE_SESSION_SECONDS", flag: "session-seconds", kind: .seconds(60...2_592_000),
                                               defaultValue: "28800", help: "how long a console sign-in lasts at most")
    static let consoleIdleSeconds = Setting(env: "CONSOLE_IDLE_SECONDS", flag: "idle-seconds", kind: .seconds(60...86_400),
                                            defaultValue: "1800", help: "a console session unused this long ends")
    static let consoleInsecureCookies = Setting(env: "CONSOLE_INSECURE_COOKIES", flag: "insecure-cookies", kind: .boolean, defaultValue: "false",
                                                help: "plain-http development only: cookies without Secure and the __Host- prefix, no HSTS")
    static let consoleAllowedHosts = Setting(env: "CONSOLE_ALLOWED_HOSTS", flag: "allowed-hosts", kind: .text, defaultValue: nil,
                                             help: "comma-separated host names the console answers to besides IP addresses, localhost and the listen host (e.g. the proxy's name)")

    static let databaseCallTimeout = Setting(env: "DATABASE_CALL_TIMEOUT_SECONDS", flag: "database-call-timeout", kind: .seconds(0.05...86_400),
                                             defaultValue: "30", help: "deadline of every database call; past it the connection is dropped")
    static let databaseConnectTimeout = Setting(env: "DATABASE_CONNECT_TIMEOUT_SECONDS", flag: "database-connect-timeout",
                                                kind: .seconds(0.05...3_600), defaultValue: "10", help: "deadline of opening a database connection")
    static let databasePreparedStatements = Setting(env: "DATABASE_PREPARED_STATEMENTS", flag: "database-prepared-statements",
                                                    kind: .choice(["auto", "on", "off"]), defaultValue: "auto",
                                                    help: "named prepared statements: auto = on direct, off behind PgBouncer")
    static let databaseIdleInTransactionTimeout = Setting(env: "DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_SECONDS",
                                                          flag: "database-idle-in-transaction-timeout", kind: .seconds(0.1...86_400),
                                                          defaultValue: "10",
                                                          help: "the server ends a session idle inside a transaction this long (its row locks go with it)")
    static let databasePoolSize = Setting(env: "DATABASE_POOL_SIZE", flag: "database-pool-size", kind: .wholeNumber(1...1_000), defaultValue: "4",
                                          help: "most pooled database connections of this process, whatever the load (a worker keeps one of them for the leadership lease when there are 2 or more)")
    static let databaseListenURL = Setting(env: "DATABASE_LISTEN_URL", flag: "database-listen-url", kind: .text, defaultValue: nil,
                                           help: "where the LISTEN session connects (default DATABASE_URL; point it past PgBouncer); off = poll only",
                                           secret: true)
    static let migrateCallTimeout = Setting(env: "MIGRATE_CALL_TIMEOUT_SECONDS", flag: "migrate-call-timeout", kind: .seconds(0...604_800),
                                            defaultValue: "0",
                                            help: "deadline of each migration statement; 0 = none (an index build takes as long as it takes)")
    static let leaderTTL = Setting(env: "LEADER_TTL_SECONDS", flag: "leader-ttl", kind: .seconds(0.3...3_600), defaultValue: "15",
                                   help: "length of the maintenance leadership lease; renewed every third of it, each renewal bounded by a third of it")

    /// Every setting above, once: what docs/reference.md's settings table is checked against.
    static let all: [Setting] = [
        databaseURL, databaseListenURL, databasePoolSize, databaseCallTimeout, databaseConnectTimeout,
        databaseIdleInTransactionTimeout, databasePreparedStatements, migrationsDir, migrateCallTimeout, leaderTTL,
        bundleID, appID, sharedSecret, sharedSecretFile, allowSandbox, verifyReceiptURL, verifyReceiptSandboxURL, rootCerts,
        appStoreAPIURL, appStoreAPISandboxURL, issuerID, keyID, privateKeyFile, appStoreRatePerSecond, appStoreRatePerHour,
        historyInterval, refundPreference,
        connectAPIURL, connectIssuerID, connectKeyID, connectPrivateKeyFile, connectVendorNumber,
        workerConcurrency, claimBatch, leaseSeconds, appleTimeout, retryBase, retryCap, retrySchedule, maxAttempts,
        sweepInterval, stuckAfter, alertRepeat, alertWebhookURL, retentionDays, witnessRetention, shutdownGrace, metricsListen,
        ingestListen, ingestToken, ingestTokenFile, maxBody,
        consoleListen, consoleTrustedHeader, consoleTrustedProxy, consoleSessionSeconds, consoleIdleSeconds,
        consoleInsecureCookies, consoleAllowedHosts,
        logFormat, logLevel,
    ]

    static let logging = [logFormat, logLevel]
    static let appStoreConnectCredentials = [connectAPIURL, connectIssuerID, connectKeyID, connectPrivateKeyFile, connectVendorNumber]
    static let appStoreConnect = appStoreConnectCredentials + [appleTimeout]
    static let database = [databaseURL, databaseCallTimeout, databaseConnectTimeout, databasePreparedStatements,
                           databaseIdleInTransactionTimeout, databasePoolSize]
}

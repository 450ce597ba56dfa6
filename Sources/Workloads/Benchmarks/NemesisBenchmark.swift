import AppleSim
import EmbeddedPostgres
import Foundation
import HTTP
import Observability
import Postgres

/// `bench nemesis [--seconds N] [--seed S] [--pace X]`: a private primary with a synchronous
/// streaming standby, worker processes reaching each through a fault proxy, apple-sim and an
/// alert webhook receiver in process, a steady stream of paid receipts, and a seeded schedule of
/// faults (`NemesisFaultKind`), each healed before a short calm. Then the feed stops, the queue
/// drains and `NemesisChecker` compares the ledger with what was paid and counts every
/// announcement by its key. One line per fault, per announcement stream and per kind covered,
/// one summary line with the seed and pace that replay the run; exit 0 when everything passed.
public struct NemesisBenchmark: Sendable {
    public struct Settings: Sendable {
        public var seconds = 120
        /// Drawn at random unless given; printed, so any run replays with `--seed` (and `--pace`).
        public var seed = NemesisBenchmark.randomSeed()
        public var workers = 3
        public var receiptsPerSecond = 100.0
        /// The workers' `LEASE_SECONDS`; a worker paused past it loses its jobs.
        public var leaseSeconds = 10.0
        /// The workers' database deadlines: the production defaults unless a test shortens them.
        public var callTimeout = 30.0
        public var connectTimeout = 10.0
        /// After the feed stops, how long the queue may take to drain.
        public var drainLimit: Duration = .seconds(180)
        /// Scales every fault's hold and calm: a short test run takes 0.5 to fit every kind in.
        public var pace = 1.0
        /// fsync on: a crashed primary is one that loses what the OS had not written.
        public var durable = false
        /// The kinds the schedule draws from; a run fails unless each of them took effect.
        var kinds = NemesisFaultKind.scheduled
        public init() {}
    }

    let context: BenchContext
    let settings: Settings
    /// Why the flags cannot be run (a negative seed or pace), reported when the run starts.
    private let invalid: String?

    public init(context: BenchContext, settings: Settings? = nil) {
        self.context = context
        var fromFlags = Settings()
        fromFlags.seconds = context.number("seconds", default: fromFlags.seconds)
        var invalid: String?
        if let seed = context.numbers["seed"] {
            if let seed = UInt64(exactly: seed) { fromFlags.seed = seed } else { invalid = "--seed \(seed): must be 0 or more" }
        }
        if let pace = context.decimals["pace"] {
            if pace > 0, pace.isFinite { fromFlags.pace = pace } else { invalid = "--pace \(pace): must be more than 0" }
        }
        fromFlags.durable = context.decimals["durable"] != nil
        self.settings = settings ?? fromFlags
        self.invalid = settings == nil ? invalid : nil
    }

    /// A seed short enough to type back.
    public static func randomSeed() -> UInt64 { UInt64.random(in: 1...999_999_999) }

    static let databaseName = "nemesis"
    static let secret = "nemesis-secret"
    /// Apple between the nemesis's own faults: quick, with a few 500/503s.
    static let appleBackground = AppleSimFaults(latency: SimLatency(min: .milliseconds(10), max: .milliseconds(50)), errorRate: 0.02)

    public func run() async throws -> Int32 {
        try await verdict() ? 0 : 1
    }

    /// Runs the nemesis; true when the check passed.
    public func verdict() async throws -> Bool {
        try await outcome().runPassed
    }

    /// Runs the nemesis; the checker's verdict.
    func outcome() async throws -> NemesisChecker.Verdict {
        if let invalid { throw WorkloadError("bench nemesis: \(invalid)") }
        guard let migrator = context.migrator else { throw WorkloadError("bench nemesis: no migrations were given") }
        let set = try await PrivateReplicaSet.start(.init(synchronous: true, durable: settings.durable))
        let simulator = AppleSimulator(configuration: AppleSimConfiguration(sharedSecret: Self.secret, seed: settings.seed,
                                                                            faults: Self.appleBackground, hangLimit: .seconds(30)))
        var proxies: [FaultProxy] = []
        let database = NemesisDatabase(set: set, name: Self.databaseName)
        let webhook = try NemesisWebhookReceiver()
        defer {
            WorkerSpawner.killAll()
            proxies.forEach { $0.stop() }
            set.stop()
        }
        try await set.createDatabase(Self.databaseName)
        try await database.client.withConnection { _ = try await migrator.migrate($0) }
        proxies = try [PrivateReplicaSet.Slot.a, .b].map { try FaultProxy(targetPort: set.port($0)) }
        try simulator.start()
        // The workers trust apple-sim's signing chain for the REFUND notifications the feeder signs.
        let rootCertificate = set.directory + "/apple-sim-root.pem"
        try simulator.serverAPI.signingChain.writeRootPEM(to: rootCertificate)
        var environment = workerEnvironment(proxies: proxies, simulator: simulator, webhook: webhook)
        environment["APPLE_ROOT_CERTS"] = rootCertificate
        let workers = try NemesisFleet(binary: context.binaryPath, count: settings.workers, environment: environment)
        let patience = Duration.milliseconds(Int((settings.callTimeout + settings.connectTimeout + 20) * 1000))
        let feeder = NemesisFeeder(database: database, rate: settings.receiptsPerSecond, signer: simulator.serverAPI.signingChain)
        let targets = NemesisTargets(set: set, proxies: proxies, fleet: workers, simulator: simulator, database: database,
                                     webhook: webhook, feeder: feeder, appleBackground: Self.appleBackground, failoverPatience: patience)
        BenchReport.line("nemesis", "setup", [
            "seed": "\(settings.seed)", "pace": BenchReport.figure(settings.pace), "seconds": "\(settings.seconds)", "workers": "\(settings.workers)",
            "receipts_per_s": BenchReport.figure(settings.receiptsPerSecond), "database": "primary + synchronous standby (fsync=\(settings.durable ? "on" : "off"))",
            "db_call_timeout_s": BenchReport.figure(settings.callTimeout), "db_connect_timeout_s": BenchReport.figure(settings.connectTimeout),
            "lease_s": BenchReport.figure(settings.leaseSeconds), "logs": workers.logDirectory,
        ])
        let verdict = try await NemesisRun(settings: settings, targets: targets).run()
        await simulator.shutdown(grace: .seconds(2))
        await webhook.stop()
        await database.close()
        if verdict.runPassed {
            workers.removeLogs()
        } else {
            FileHandle.standardError.write(Data("bench nemesis: logs kept in \(workers.logDirectory)\n".utf8))
        }
        return verdict
    }

    private func workerEnvironment(proxies: [FaultProxy], simulator: AppleSimulator, webhook: NemesisWebhookReceiver) -> [String: String] {
        [
            // Both slots through their proxies: libpq finds the primary, whichever slot holds it.
            "DATABASE_URL": "postgresql://postgres@127.0.0.1:\(proxies[0].port),127.0.0.1:\(proxies[1].port)/\(Self.databaseName)"
                + "?target_session_attrs=read-write&sslmode=disable",
            "DATABASE_CALL_TIMEOUT_SECONDS": BenchReport.figure(settings.callTimeout),
            "DATABASE_CONNECT_TIMEOUT_SECONDS": BenchReport.figure(settings.connectTimeout),
            // JSON lines: the checker reads every announcement back, key by key.
            "METRICS_LISTEN": "off", "LOG_LEVEL": "info", "LOG_FORMAT": "json", "ALERT_WEBHOOK_URL": webhook.url,
            "APPLE_BUNDLE_ID": NemesisFeeder.bundleID, "APPLE_APP_ID": "\(NemesisFeeder.appAppleID)", "APPLE_SHARED_SECRET": Self.secret,
            "APPLE_VERIFY_RECEIPT_URL": simulator.productionURL.absoluteString,
            "APPLE_VERIFY_RECEIPT_SANDBOX_URL": simulator.sandboxURL.absoluteString,
            "APPLE_TIMEOUT_SECONDS": "3", "LEASE_SECONDS": BenchReport.figure(settings.leaseSeconds), "LEADER_TTL_SECONDS": "6",
            // Room for a receipt caught in several faults in a row before its attempts run out.
            "RETRY_SCHEDULE": "0.5,1,2,4", "MAX_ATTEMPTS": "15", "SWEEP_INTERVAL_SECONDS": "2",
            "WORKER_CONCURRENCY": "100", "CLAIM_BATCH": "50", "SHUTDOWN_GRACE_SECONDS": "5",
        ]
    }
}

import Foundation
import HTTP
import Observability
import Postgres
import Queue
import Settlement
import AppStore

enum WorkCommand {
    static let queueSettings = [
        Settings.workerConcurrency, Settings.claimBatch, Settings.leaseSeconds, Settings.retryBase, Settings.retryCap,
        Settings.retrySchedule, Settings.maxAttempts, Settings.sweepInterval, Settings.shutdownGrace,
    ]

    static let appleSettings = [
        Settings.bundleID, Settings.appID, Settings.sharedSecret, Settings.sharedSecretFile, Settings.allowSandbox,
        Settings.verifyReceiptURL, Settings.verifyReceiptSandboxURL, Settings.appleTimeout, Settings.alertWebhookURL,
        Settings.retentionDays, Settings.witnessRetention, Settings.rootCerts, Settings.appStoreAPIURL, Settings.appStoreAPISandboxURL, Settings.issuerID,
        Settings.keyID, Settings.privateKeyFile, Settings.appStoreRatePerSecond, Settings.appStoreRatePerHour,
        Settings.historyInterval, Settings.refundPreference,
    ] + Settings.appStoreConnectCredentials

    static let spec = CommandSpec(
        name: "work",
        summary: "The worker process: claims and verifies jobs, credits, alerts; serves /metrics, /healthz, /readyz; runs the sweeps when it holds the duty.",
        usage: "work [--concurrency N] [--metrics-listen ADDR] ...",
        settings: Settings.database + [Settings.databaseListenURL, Settings.leaderTTL] + queueSettings + appleSettings
            + [Settings.metricsListen, Settings.stuckAfter, Settings.alertRepeat] + Settings.logging,
        flags: [
            CommandFlag(name: "verifier", takesValue: true, help: "apple (default) | noop (benchmarks and drills: every job done at once)"),
            CommandFlag(name: "noop-delay", takesValue: true, help: "with --verifier noop: seconds each job takes"),
        ])

    static func run(_ runtime: Runtime) async throws -> Int32 {
        let options = runtime.options
        var configuration = queueConfiguration(options)
        let registry = MetricsRegistry()
        let listenURL = try runtime.databaseListenURL()
        let listener = try listenURL.map { try runtime.databaseConfiguration(url: $0, applicationName: "receipt-worker-listen") }
        // The connection budget: the lease's own session is one of DATABASE_POOL_SIZE, so renewals never
        // queue behind completions; a pool of one has no room for it.
        let poolSize = runtime.databasePoolSize
        guard poolSize >= 2 else {
            throw UsageError("invalid DATABASE_POOL_SIZE '1' for work: at least 2, one of them for the leadership lease's renewals")
        }
        let client = try runtime.databaseClient(applicationName: "receipt-worker-work", maxConnections: poolSize - 1,
                                                observer: DatabaseMetrics(registry: registry))
        DatabaseMetrics.watch(client, registry: registry)
        let leaseClient = LeaderLeaseStore.dedicatedClient(client.configuration, ttl: options.seconds(Settings.leaderTTL))
        configuration.leaderConnections = 1
        switch options.flag("verifier") ?? "apple" {
        case "noop":
            guard let delay = SettlementWiring.seconds(options.flag("noop-delay") ?? "0") else {
                throw UsageError("invalid --noop-delay: must be decimal seconds")
            }
            return try await WorkerProcess(runtime: runtime, client: client, leaseClient: leaseClient, listener: listener, registry: registry,
                                           configuration: configuration, handler: NoOpHandler(delay: .seconds(delay))).run()
        case "apple":
            let wiring = try SettlementWiring(runtime: runtime, registry: registry, maxAttempts: configuration.maxAttempts,
                                           concurrency: configuration.concurrency, client: client)
            var process = WorkerProcess(runtime: runtime, client: client, leaseClient: leaseClient, listener: listener, registry: registry,
                                        configuration: configuration, handler: wiring.handler)
            process.extraMaintenance = wiring.maintenance(client: client)
            let webhook = wiring.webhook.map { hook in Task { await hook.run() } }
            defer { webhook?.cancel() }
            return try await process.run()
        case let other:
            throw UsageError("invalid --verifier '\(other)': must be apple or noop")
        }
    }

    static func queueConfiguration(_ options: CommandLineOptions) -> QueueConfiguration {
        var configuration = QueueConfiguration()
        configuration.concurrency = options.int(Settings.workerConcurrency)
        configuration.claimBatch = options.int(Settings.claimBatch)
        configuration.leaseSeconds = options.seconds(Settings.leaseSeconds)
        configuration.maxAttempts = options.int(Settings.maxAttempts)
        configuration.shutdownGrace = options.seconds(Settings.shutdownGrace)
        configuration.witnessRetention = options.seconds(Settings.witnessRetention)
        let schedule = options.list(Settings.retrySchedule).compactMap(Double.init)
        configuration.retryPolicy = schedule.isEmpty
            ? .exponential(base: options.seconds(Settings.retryBase), cap: options.seconds(Settings.retryCap))
            : .schedule(schedule)
        return configuration
    }
}

/// One worker process: the pool, maintenance, the operations endpoint and signals.
struct WorkerProcess<Handler: JobHandler>: Sendable {
    let runtime: Runtime
    let client: PostgresClient
    /// Where the maintenance lease is renewed: a session of its own, never queued behind completions.
    let leaseClient: PostgresClient
    /// The LISTEN session's configuration; nil polls only.
    let listener: PostgresConfiguration?
    let registry: MetricsRegistry
    let configuration: QueueConfiguration
    let handler: Handler
    var extraMaintenance: [any MaintenanceTask] = []

    func run() async throws -> Int32 {
        let logger = runtime.logger
        let store = QueueStore(client: client)
        let worker = QueueWorker(store: store, handler: handler, configuration: configuration, logger: logger,
                                 metrics: QueueMetrics(registry: registry), listener: listener)
        warnIfOpenFilesAreShort(databaseConnections: worker.databaseConnectionsMax, logger)
        let tasks: [any MaintenanceTask] = [
            LeaseRescuer(store: store, interval: max(0.5, min(5, configuration.leaseSeconds / 4)),
                         maxAttempts: configuration.maxAttempts, logger: logger),
            TimedOutSweeper(store: store, interval: runtime.options.seconds(Settings.sweepInterval), logger: logger),
            CommitWitnessCleaner(store: store, retention: configuration.witnessRetention, logger: logger),
            StrayJobPlacer(store: store, logger: logger),
            ReadySetVacuum(store: store, logger: logger),
        ] + extraMaintenance
        let leader = registry.gauge("iap_leader", help: "1 on the process that holds the maintenance lease.")
        let maintenance = Maintenance(client: leaseClient, leaderID: configuration.workerID, tasks: tasks,
                                      logger: logger.with(["worker": .string(configuration.workerID)]),
                                      ttl: runtime.options.seconds(Settings.leaderTTL),
                                      dutyInterval: min(2, max(0.2, runtime.options.seconds(Settings.sweepInterval))),
                                      onLeadershipChange: { leader.set($0 ? 1 : 0) })
        let endpoint = try OperationsEndpoint.start(listen: runtime.options.string(Settings.metricsListen), registry: registry,
                                                    ready: { worker.isHealthy }, logger: logger)
        // Sampled only where something can be scraped: counting the queue costs the database.
        let gauges = endpoint == nil ? nil : DatabaseGauges.start(client: client, registry: registry, shouldSample: { maintenance.isLeader })
        let signals = SignalWatcher()
        let signalTask = Task.detached {
            var count = 0
            for await number in signals.signals {
                count += 1
                if count == 1 {
                    logger.notice("shutdown_requested", ["signal": .int(Int(number))])
                    worker.shutdown()
                    maintenance.stop()
                } else {
                    logger.warning("shutdown_forced", ["signal": .int(Int(number))])
                    exit(1) // leases bring the jobs back
                }
            }
        }
        let maintenanceTask = Task { await maintenance.run() }
        await worker.run()
        maintenance.stop()
        await maintenanceTask.value
        gauges?.cancel()
        signalTask.cancel()
        signals.cancel()
        if let endpoint { await endpoint.shutdown(grace: .seconds(1)) }
        await client.close()
        await leaseClient.close()
        return 0
    }

    /// With fewer open files than its verifications in flight need, a worker's connects to Apple
    /// fail (EMFILE) and its jobs go back for retries: said once at start, where it can be fixed.
    private func warnIfOpenFilesAreShort(databaseConnections: Int, _ logger: Logger) {
        let needed = OpenFileLimit.neededByWorker(concurrency: configuration.concurrency, databaseConnections: databaseConnections)
        guard let limit = OpenFileLimit.current, limit < needed else { return }
        logger.warning("open_files_limit_low", ["limit": .int(limit), "needed": .int(needed),
                                                "hint": "raise the hard limit (LimitNOFILE=, ulimit -Hn) or lower WORKER_CONCURRENCY"])
    }
}

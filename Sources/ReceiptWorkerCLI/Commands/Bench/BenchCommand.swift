import Foundation
import Workloads

/// `receipt-worker bench NAME`: parses the flags and hands a database to the workload,
/// which lives in the Workloads module.
enum BenchCommand {
    static let numberFlags = ["jobs", "concurrency", "claim-batch", "processes", "rounds", "seconds", "in-flight"]
    static let benchmarks = ["apple", "appstore", "chaos", "console", "ingest", "nemesis", "queue", "reconcile", "soak", "transport"]

    static let spec = CommandSpec(
        name: "bench",
        summary: "Benchmarks, one result line each: queue (throughput direct and through PgBouncer, raw-SQL ceiling and the lean ceiling of a one-index queue table, claim and completion time per job, HOT updates and WAL per job, NOTIFY latency, idle cost), apple (verify+credit via apple-sim, against the raw-SQL money-path ceiling), ingest, soak (faults), chaos (every database connection frozen mid-run), transport (the HTTP clients at 2,000 in flight), console (every support console page at 1,000,000 jobs), appstore (the fleet-wide App Store Server API limit, history backfill), reconcile (a day of 1,000,000 purchases against Apple's sales summary), nemesis (a seeded schedule of faults, failovers included, against a primary with a standby; an exactly-once check).",
        usage: "bench queue|apple|ingest|soak|chaos|transport|console|appstore|reconcile|nemesis [--jobs N] [--concurrency N] [--claim-batch N] [--processes N] [--rounds N] [--seconds N] [--in-flight N] [--seed N] [--pace X] [--durable] [--wrk] [--yardstick] [--apple-url URL]",
        settings: Settings.database + [Settings.migrationsDir] + Settings.logging,
        flags: [
            CommandFlag(name: "jobs", takesValue: true, help: "jobs per drain (default 100000)"),
            CommandFlag(name: "concurrency", takesValue: true, help: "worker slots (queue: default 2000, two claims of a batch in flight as the lean ceiling has two lanes; apple at 0 latency: 1024; transport: 2000)"),
            CommandFlag(name: "claim-batch", takesValue: true, help: "jobs per claim (default 1000)"),
            CommandFlag(name: "processes", takesValue: true, help: "worker processes for the multi-process drain (default 4)"),
            CommandFlag(name: "rounds", takesValue: true, help: "queue, apple: measured rounds, each a drain beside its ceiling; medians reported (default 3)"),
            CommandFlag(name: "seconds", takesValue: true, help: "soak, nemesis: how long to run (default 120)"),
            CommandFlag(name: "in-flight", takesValue: true, help: "apple: Apple requests in flight in the 3 s phase (default 2000)"),
            CommandFlag(name: "seed", takesValue: true, help: "nemesis: the fault schedule's seed, 0 or more (default: drawn at random and printed; the same seed, the same schedule)"),
            CommandFlag(name: "pace", takesValue: true, help: "nemesis: scales every fault's hold and calm (default 1; printed with the seed)"),
            CommandFlag(name: "durable", takesValue: false, help: "nemesis: the primary and standby flush to disk (fsync on; default off)"),
            CommandFlag(name: "apple-url", takesValue: true, help: "apple: in the 3 s phase, verify against this verifyReceipt URL (a fake Apple outside the product, on loopback, e.g. scripts/fake-apple.py) instead of apple-sim"),
            CommandFlag(name: "yardstick", takesValue: false, help: "queue: only the rounds of the drain beside its ceilings and the plain-SQL yardstick, and the drain's cost per job"),
            CommandFlag(name: "wrk", takesValue: false, help: "ingest: drive the HTTP API with wrk from outside (1 thread, --concurrency connections, --seconds, default 15)"),
        ],
        positionals: 1...1,
        actions: benchmarks)

    static func run(_ runtime: Runtime) async throws -> Int32 {
        let name = runtime.options.positionals[0]
        guard benchmarks.contains(name) else {
            throw UsageError("unknown benchmark '\(name)' (benchmarks: \(benchmarks.joined(separator: ", ")))")
        }
        let numbers = try numbers(runtime)
        var given = try decimals(runtime)
        // A switch travels as 1 among the decimals.
        if runtime.options.has("durable") { given["durable"] = 1 }
        if runtime.options.has("wrk") { given["wrk"] = 1 }
        if runtime.options.has("yardstick") { given["yardstick"] = 1 }
        let decimals = given
        let texts = try texts(runtime)
        if name == "transport" {
            return try await TransportBenchmark(context: BenchContext(databaseURL: "", cluster: nil, migrator: nil, numbers: numbers,
                                                                      logger: runtime.logger)).run()
        }
        let workloads: [String: @Sendable (BenchContext) async throws -> Int32] = [
            "queue": { try await QueueBenchmark(context: $0).run() },
            "ingest": { try await IngestBenchmark(context: $0).run() },
            "apple": { try await AppleBenchmark(context: $0).run() },
            "soak": { try await SoakBenchmark(context: $0).run() },
            "chaos": { try await ChaosBenchmark(context: $0).run() },
            "console": { try await ConsoleBenchmark(context: $0).run() },
            "appstore": { try await AppStoreAPIBenchmark(context: $0).run() },
            "reconcile": { try await ReconciliationBenchmark(context: $0).run() },
            // Starts its own primary and standby; the private cluster it is handed stays idle.
            "nemesis": { try await NemesisBenchmark(context: $0).run() },
        ]
        guard let workload = workloads[name] else {
            throw UsageError("benchmark '\(name)' is listed but has no workload")
        }
        let migrator = try MigrateCommand.loadMigrator(runtime)
        return try await EmbeddedDatabase.withDatabase(runtime, statementStatistics: true) { url, cluster in
            try await workload(BenchContext(databaseURL: url, cluster: cluster, migrator: migrator, numbers: numbers,
                                            decimals: decimals, texts: texts, logger: runtime.logger, databasePoolSize: runtime.databasePoolSize))
        }
    }

    /// The text flags given, each checked.
    private static func texts(_ runtime: Runtime) throws -> [String: String] {
        guard let text = runtime.options.flag("apple-url") else { return [:] }
        guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https", url.host != nil else {
            throw UsageError("invalid --apple-url '\(text)': must be an http or https URL")
        }
        return ["apple-url": text]
    }

    /// The numeric flags given, each a positive whole number.
    private static func numbers(_ runtime: Runtime) throws -> [String: Int] {
        var numbers: [String: Int] = [:]
        for flag in numberFlags {
            guard let text = runtime.options.flag(flag) else { continue }
            guard let number = Int(text), number > 0 else { throw UsageError("invalid --\(flag) '\(text)': must be a positive whole number") }
            numbers[flag] = number
        }
        // A seed may be 0; the whole range a run prints fits in an Int.
        if let text = runtime.options.flag("seed") {
            guard let seed = Int(text), seed >= 0 else { throw UsageError("invalid --seed '\(text)': must be a whole number, 0 or more") }
            numbers["seed"] = seed
        }
        return numbers
    }

    /// The decimal flags given, each positive.
    private static func decimals(_ runtime: Runtime) throws -> [String: Double] {
        guard let text = runtime.options.flag("pace") else { return [:] }
        guard let pace = Double(text), pace.isFinite, pace > 0, pace <= 100 else {
            throw UsageError("invalid --pace '\(text)': must be a decimal number above 0, at most 100")
        }
        return ["pace": pace]
    }
}

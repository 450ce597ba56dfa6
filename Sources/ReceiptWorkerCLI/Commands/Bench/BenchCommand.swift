import Foundation

enum BenchCommand {
    static let spec = CommandSpec(
        name: "bench",
        summary: "Benchmarks, one result line each: queue (throughput, raw-SQL ceiling, NOTIFY latency, idle cost), apple (verify+credit via apple-sim), ingest, soak (faults), transport (the HTTP clients at 2,000 in flight), appstore (the fleet-wide App Store Server API limit, history backfill).",
        usage: "bench queue|apple|ingest|soak|transport|appstore [--jobs N] [--concurrency N] [--claim-batch N] [--processes N] [--seconds N]",
        settings: Settings.database + [Settings.migrationsDir] + Settings.logging,
        flags: [
            CommandFlag(name: "jobs", takesValue: true, help: "jobs per drain (default 100000)"),
            CommandFlag(name: "concurrency", takesValue: true, help: "worker slots (default 1000)"),
            CommandFlag(name: "claim-batch", takesValue: true, help: "jobs per claim (default 1000)"),
            CommandFlag(name: "processes", takesValue: true, help: "worker processes for the multi-process drain (default 4)"),
            CommandFlag(name: "seconds", takesValue: true, help: "soak: how long to run (default 120)"),
        ],
        positionals: 1...1)

    static func run(_ runtime: Runtime) async throws -> Int32 {
        switch runtime.options.positionals[0] {
        case "queue": return try await QueueBenchmark(runtime: runtime).run()
        case "ingest": return try await IngestBenchmark(runtime: runtime).run()
        case "apple": return try await AppleBenchmark(runtime: runtime).run()
        case "soak": return try await SoakBenchmark(runtime: runtime).run()
        case "transport": return try await TransportBenchmark(runtime: runtime).run()
        case "appstore": return try await AppStoreAPIBenchmark(runtime: runtime).run()
        case let other: throw UsageError("unknown benchmark '\(other)' (benchmarks: queue, apple, ingest, soak, transport, appstore)")
        }
    }

    static func wholeNumber(_ runtime: Runtime, _ flag: String, default value: Int) throws -> Int {
        guard let text = runtime.options.flag(flag) else { return value }
        guard let number = Int(text), number > 0 else { throw UsageError("invalid --\(flag) '\(text)': must be a positive whole number") }
        return number
    }
}

/// Peak resident set size of this process (VmHWM), in MiB.
enum ResourceUsage {
    static func peakRSSMiB(pid: String = "self") -> Double {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
              let kib = Double(line.split(separator: " ").dropFirst().first ?? "") else { return 0 }
        return kib / 1024
    }

    /// User + system CPU seconds used by this process so far.
    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
            + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    }
}

/// One result line per measurement: `bench queue drain: drain_jobs_per_s=34353 processes=1 ...`.
enum BenchReport {
    static func line(_ bench: String, _ name: String, _ fields: KeyValuePairs<String, String>) {
        Console.print("bench \(bench) \(name): "
                      + fields.map { "\($0.key)=\($0.value.contains(" ") ? "\"\($0.value)\"" : $0.value)" }.joined(separator: " "))
    }

    /// Whole numbers from 100 up, two decimals below.
    static func figure(_ value: Double) -> String { value >= 100 ? String(Int(value.rounded())) : String(format: "%.2f", value) }
}

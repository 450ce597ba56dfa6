import AppleSim
import Foundation
import Observability

/// `receipt-worker apple-sim`: a local stand-in for Apple's verifyReceipt endpoints with latency
/// and fault injection, serving until SIGTERM/SIGINT. The simulator's own parser checks the flags.
enum AppleSimCommand {
    /// The simulator's flags, mirrored only so the generic parser lets them through (it rejects
    /// unknown flags); `AppleSimConfiguration.parse` still judges every value.
    static let simulatorFlags: [CommandFlag] = [
        CommandFlag(name: "listen", takesValue: true, help: "HOST:PORT to serve on (default 127.0.0.1:0, any free port)"),
        CommandFlag(name: "shared-secret", takesValue: true, help: "answer 21004 to requests whose password differs"),
        CommandFlag(name: "seed", takesValue: true, help: "makes latency and fault rolls reproducible"),
        CommandFlag(name: "latency", takesValue: true, help: "added delay: 200ms, or a range like 3s-6s"),
        CommandFlag(name: "error-rate", takesValue: true, help: "share of requests answered HTTP 500/503"),
        CommandFlag(name: "status-21005-rate", takesValue: true, help: "share answered status 21005"),
        CommandFlag(name: "retryable-rate", takesValue: true, help: "share answered 21199 flagged retryable"),
        CommandFlag(name: "hang-rate", takesValue: true, help: "share never answered"),
        CommandFlag(name: "reset-rate", takesValue: true, help: "share whose connection is closed unanswered"),
        CommandFlag(name: "malformed-rate", takesValue: true, help: "share answered with truncated JSON"),
        CommandFlag(name: "outage", takesValue: true, help: "START:DURATION of answering 503 to everything, e.g. 5s:10s"),
    ]

    static let spec = CommandSpec(
        name: "apple-sim",
        summary: "A local stand-in for Apple's verifyReceipt (production and sandbox) with latency and fault injection; "
            + "controls at /sim/faults, /sim/outage, /sim/stats.",
        usage: AppleSimConfiguration.usage,
        settings: Settings.logging,
        flags: simulatorFlags)

    static func run(_ runtime: Runtime) async throws -> Int32 {
        let configuration: AppleSimConfiguration
        do {
            configuration = try AppleSimConfiguration.parse(arguments: simulatorArguments(runtime.options))
        } catch {
            throw UsageError(error.description)  // names the flag, never echoes the shared secret
        }
        let runtime = Runtime(options: runtime.options, environment: runtime.environment,
                              secrets: configuration.sharedSecret.map { [$0] } ?? [])
        let logger = runtime.logger
        // The simulator's own start line has no `port` field; ours below replaces it, while its
        // notices (fault and outage changes) still get through.
        let simulator = AppleSimulator(configuration: configuration, logger: logger.withMinimumLevel(max(.notice, logger.minimumLevel)))
        let signals = SignalWatcher()  // before the start line: whoever reads it may signal at once
        let port: Int
        do {
            port = try simulator.start()
        } catch {
            throw IngestCommand.listenFailure("--listen", "\(configuration.host):\(configuration.port)", error)
        }
        logger.info("apple_sim_started", [
            "host": .string(configuration.host), "port": .int(port),
            "password_check": .bool(configuration.sharedSecret != nil),
            "seed": .string(configuration.seed.map(String.init) ?? "random"),
        ])
        let number = await signals.firstSignal(logger: logger)
        logger.notice("shutdown_requested", ["signal": .int(Int(number))])
        await simulator.shutdown(grace: .seconds(5))
        logger.info("apple_sim_stopped", ["requests": .int(simulator.stats.requests)])
        return 0
    }

    /// The mirrored flags back as `--name value` pairs for the simulator's parser.
    static func simulatorArguments(_ options: CommandLineOptions) -> [String] {
        simulatorFlags.flatMap { flag in options.flag(flag.name).map { ["--\(flag.name)", $0] } ?? [] }
    }
}

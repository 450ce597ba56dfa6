import AppleSim
import Foundation
import Observability

/// `receipt-worker apple-sim`: a local stand-in for Apple's verifyReceipt endpoints with latency
/// and fault injection, serving until SIGTERM/SIGINT. The simulator's own parser checks the flags.
enum AppleSimCommand {
    /// The simulator's own flags, so the generic parser lets them through (it rejects unknown
    /// flags); `AppleSimConfiguration.parse` still judges every value.
    static let simulatorFlags = AppleSimConfiguration.flags.map { CommandFlag(name: $0.name, takesValue: true, help: $0.help) }

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

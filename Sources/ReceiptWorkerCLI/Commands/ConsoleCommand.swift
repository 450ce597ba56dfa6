import Foundation
import Observability
import SupportConsole

/// `receipt-worker console`: the support console until SIGTERM/SIGINT;
/// the user commands (ConsoleUserCommands) read a password from stdin.
enum ConsoleCommand {
    static let spec = CommandSpec(
        name: "console",
        summary: "The support console, a web application on --listen (default 127.0.0.1:8090); console add-user NAME --role viewer|support "
            + "and set-password NAME (password on stdin, 12+ characters), set-role NAME --role R, disable-user NAME, enable-user NAME, list-users.",
        usage: "console [--listen HOST:PORT] [--trusted-header H --trusted-proxy ADDR,...] | console add-user NAME --role viewer|support "
            + "| console set-password NAME | console set-role NAME --role viewer|support | console disable-user NAME | console enable-user NAME "
            + "| console list-users",
        // The App Store settings enable the Apple order id lookup page; without them it says it is unavailable.
        settings: AppStoreAccess.settings + [Settings.consoleListen, Settings.consoleTrustedHeader, Settings.consoleTrustedProxy,
                                             Settings.consoleSessionSeconds, Settings.consoleIdleSeconds, Settings.consoleInsecureCookies,
                                             Settings.consoleAllowedHosts, Settings.shutdownGrace],
        flags: [CommandFlag(name: "role", takesValue: true, help: "add-user, set-role: viewer (read) or support (read and act)")],
        positionals: 0...2,
        actions: ConsoleUserCommands.actions)

    static func run(_ runtime: Runtime) async throws -> Int32 {
        switch runtime.options.positionals.first {
        case nil: return try await serve(runtime)
        case let action? where ConsoleUserCommands.actions.contains(action): return try await ConsoleUserCommands.run(action, runtime)
        case let other?: throw UsageError("unknown console action '\(other)' (usage: receipt-worker \(spec.usage))")
        }
    }

    private static func serve(_ runtime: Runtime) async throws -> Int32 {
        let options = runtime.options
        let header = options.string(Settings.consoleTrustedHeader)
        let proxies: TrustedProxies
        do {
            proxies = try TrustedProxies(options.list(Settings.consoleTrustedProxy))
        } catch {
            throw UsageError("CONSOLE_TRUSTED_PROXY (--trusted-proxy): \(error)")
        }
        if header != nil, proxies.isEmpty {
            throw UsageError("CONSOLE_TRUSTED_PROXY is not set: CONSOLE_TRUSTED_HEADER is believed only from the proxies it names")
        }
        let listen = try options.require(Settings.consoleListen)
        let configuration = try ConsoleConfiguration(listen: listen, trustedHeader: header, trustedProxies: proxies,
                                                     sessionSeconds: options.seconds(Settings.consoleSessionSeconds),
                                                     idleSeconds: options.seconds(Settings.consoleIdleSeconds),
                                                     insecureCookies: options.bool(Settings.consoleInsecureCookies),
                                                     allowedHosts: Set(options.list(Settings.consoleAllowedHosts)))
        let client = try await runtime.connectDatabase(maxConnections: 4, applicationName: "receipt-worker-console")
        let registry = MetricsRegistry()
        let lookup: ConsoleOrderLookup?
        do {
            lookup = try ConsoleOrderLookup.make(runtime, client: client, registry: registry)
        } catch {
            await client.close()
            throw error
        }
        let server = ConsoleServer(configuration: configuration, client: client, registry: registry, logger: runtime.logger,
                                   lookup: lookup)
        let signals = SignalWatcher()
        do {
            try server.start()
        } catch {
            await client.close()
            throw IngestCommand.listenFailure("CONSOLE_LISTEN (--listen)", listen, error)
        }
        let number = await signals.firstSignal(logger: runtime.logger)
        runtime.logger.notice("shutdown_requested", ["signal": .int(Int(number))])
        await server.shutdown(grace: options.duration(Settings.shutdownGrace))
        await client.close()
        return 0
    }
}

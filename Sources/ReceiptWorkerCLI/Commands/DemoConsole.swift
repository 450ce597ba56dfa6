import Foundation
import Observability
import Postgres
import SupportConsole
import Workloads

/// The demo's last stop: the support console over the demo's data, with a one-time login. It
/// stays up until Ctrl-C when a person is at the terminal; scripts, CI and `demo --exit` go on.
enum DemoConsole {
    static func offer(_ runtime: Runtime, client: PostgresClient, databaseURL: String) async throws {
        let password = UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
        let user = "demo"
        try await ConsoleUsers(client: client).add(name: user, role: .support, password: String(password))
        let support = try await DemoSupportDesk.start(client: client, logger: runtime.logger)
        let server = try startServer(runtime, client: client, oneTimeUser: user, lookup: ConsoleOrderLookup(desk: support.lookup))
        Console.print("""

            Support console: http://127.0.0.1:\(server.port)/  (user \(user), one-time password \(password): it works for one sign-in)
              - Alerts: frank's paid_not_credited payment can be credited to his open order order-frank-1.
              - Apple order lookup: \(DemoSupportDesk.appleOrderID) (quinn's purchase the app never uploaded; credit it to order-quinn-1).
            DATABASE_URL=\(databaseURL)
            """)
        if runtime.options.has("exit") || isatty(STDIN_FILENO) != 1 {
            await server.shutdown(grace: .seconds(1))
            await support.shutdown()
            return
        }
        Console.print("The console stays up while you look; press Ctrl-C to stop the demo and remove its database.")
        let signals = SignalWatcher()
        _ = await signals.firstSignal(logger: runtime.logger)
        await server.shutdown(grace: .seconds(2))
        await support.shutdown()
    }

    /// 127.0.0.1:8090 (the console's default) when free, else any free loopback port.
    private static func startServer(_ runtime: Runtime, client: PostgresClient, oneTimeUser: String,
                                    lookup: any AppleOrderLookup) throws -> ConsoleServer {
        let quiet = runtime.logger.withMinimumLevel(.warning)
        for listen in ["127.0.0.1:8090", "127.0.0.1:0"] {
            var configuration = try ConsoleConfiguration(listen: listen)
            configuration.oneTimePasswordUsers = [oneTimeUser]
            let server = ConsoleServer(configuration: configuration, client: client, registry: MetricsRegistry(), logger: quiet,
                                       lookup: lookup)
            do {
                try server.start()
                return server
            } catch where listen.hasSuffix(":8090") {
                continue
            }
        }
        throw UsageError("the support console could not listen on 127.0.0.1")
    }
}

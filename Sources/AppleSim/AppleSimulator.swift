import AppStore
import Foundation
import HTTP
import Observability

/// A local stand-in for Apple's verifyReceipt endpoints with latency and fault injection.
///
/// Routes: `POST /verifyReceipt` (production), `POST /sandbox/verifyReceipt`, `GET|POST /sim/faults`,
/// `POST /sim/outage {"seconds":N}`, `GET /sim/stats`, `GET /healthz`, plus the StoreKit 2 routes of `SimServerAPI`.
public final class AppleSimulator: Sendable {
    public let configuration: AppleSimConfiguration
    private let engine: SimEngine
    private let server: HTTPServer
    private let logger: Logger?
    /// StoreKit 2: signed transactions and notifications, Get Transaction Info (see `SimServerAPIRoutes`).
    public let serverAPI: SimServerAPI

    /// - Parameter serverAPI: the App Store Server API stand-in (a fresh signing chain and API key when nil).
    public init(configuration: AppleSimConfiguration = AppleSimConfiguration(), logger: Logger? = nil,
                serverAPI: SimServerAPI? = nil) {
        self.configuration = configuration
        self.logger = logger
        let serverAPI = serverAPI ?? SimServerAPI.standard()
        self.serverAPI = serverAPI
        serverAPI.salesBook.reportDelay = configuration.salesReportDelay
        let engine = SimEngine(configuration: configuration, salesBook: serverAPI.salesBook)
        self.engine = engine
        var router = SimRoutes.router(engine, logger: logger, serverAPI: self.serverAPI)
        self.serverAPI.addRoutes(to: &router)
        // Thousands of workers' connections can arrive in one burst (a wave of 3 s verifications
        // ending together); a short accept backlog would drop SYNs and add 1 s retransmits.
        // Apple has no connection limit a worker could meet: room for any --in-flight asked of it.
        var serverConfiguration = HTTPServerConfiguration(host: configuration.host, port: configuration.port,
                                                          maxConnections: 50_000, listenBacklog: 4096)
        serverConfiguration.immediateHandler = SimRoutes.immediate(engine)
        server = HTTPServer(configuration: serverConfiguration, router: router)
    }

    /// Binds and starts serving; returns the bound port. The `--outage` window starts counting now.
    @discardableResult
    public func start() throws -> Int {
        let port = try server.start()
        engine.setFaults(engine.faults)  // (re)starts the configured outage window from now
        logger?.info("apple_sim_started", ["listen": .string("\(configuration.host):\(port)"),
                                           "faults": .string(SimRoutes.describe(configuration.faults))])
        return port
    }

    /// Starts if needed and serves until the calling task is cancelled (then drains).
    public func run() async throws {
        if server.port == 0 { try start() }
        let engine = self.engine
        try await withTaskCancellationHandler {
            try await server.run()
        } onCancel: {
            engine.hangs.releaseAll()
        }
    }

    /// Lets hung requests go (their connections close unanswered), then drains the server.
    public func shutdown(grace: Duration = .seconds(5)) async {
        engine.hangs.releaseAll()
        await server.shutdown(grace: grace)
    }

    public var port: Int { server.port }
    /// `http://HOST:PORT` of the running simulator (for clients; a wildcard host becomes 127.0.0.1).
    public var baseURL: URL {
        let host = ["0.0.0.0", "::", ""].contains(configuration.host) ? "127.0.0.1"
            : configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        return URL(string: "http://\(host):\(port)")!
    }
    public var productionURL: URL { baseURL.appendingPathComponent("verifyReceipt") }
    public var sandboxURL: URL { baseURL.appendingPathComponent("sandbox/verifyReceipt") }

    /// The same controls as the HTTP ones, for in-process callers.
    public var faults: AppleSimFaults { engine.faults }
    public func setFaults(_ faults: AppleSimFaults) throws(AppleSimSettingError) {
        try faults.validate()
        engine.setFaults(faults)
    }
    public func startOutage(for duration: Duration) { engine.startOutage(for: duration) }
    public var stats: AppleSimStats { engine.stats }
}

import Foundation
import HTTP
import Observability
import Postgres
import Settlement

/// `receipt-worker console`: the support console on its own HTTP server.
public final class ConsoleServer: Sendable {
    let app: ConsoleApp
    let server: HTTPServer

    public init(configuration: ConsoleConfiguration, client: PostgresClient, registry: MetricsRegistry, logger: Logger,
                lookup: (any AppleOrderLookup)? = nil) {
        app = ConsoleApp(configuration: configuration, client: client, registry: registry, logger: logger, lookup: lookup)
        let metrics = ConsoleMetrics(registry: registry)
        let router = app.router()
        let serverConfiguration = HTTPServerConfiguration(
            host: configuration.host, port: configuration.port, maxBodyBytes: 64 * 1024,
            onRequestCompleted: { _, route, status, seconds in metrics.observe(route: route, status: status, seconds: seconds) })
        let originCheck = RequestOriginCheck(configuration: configuration)
        let hsts = configuration.secureCookies
        server = HTTPServer(configuration: serverConfiguration) { request in
            if let refusal = originCheck.refusal(request) { return Responses.secured(refusal, hsts: hsts) }
            return Responses.secured(await router.handle(request), hsts: hsts)
        }
    }

    /// Binds and serves; returns the bound port.
    @discardableResult
    public func start() throws -> Int {
        let port = try server.start()
        app.logger.notice("console_started", ["address": .string(app.configuration.host), "port": .int(port),
                                              "sso": .bool(app.configuration.trustedHeader != nil)])
        return port
    }

    public var port: Int { server.port }

    public func shutdown(grace: Duration = .seconds(5)) async { await server.shutdown(grace: grace) }
}

/// The console's dependencies, shared by its route handlers.
package struct ConsoleApp: Sendable {
    let configuration: ConsoleConfiguration
    let client: PostgresClient
    let registry: MetricsRegistry
    let logger: Logger
    let lookup: (any AppleOrderLookup)?
    let audit: AuditLog
    /// Apple order id lookups, kept for the find box, with their audit rows.
    let lookups: OrderLookupLog
    let users: ConsoleUsers
    let sessions: SessionStore
    let gatekeeper: Gatekeeper
    let throttle: LoginThrottle
    /// scrypt off the cooperative pool.
    let hashing: PasswordHashing
    /// The exactly-once manual credit `alerts credit` uses.
    let desk: SupportDesk
    /// Outcomes and refusals of forms, for the page each redirects to.
    let flashes: FlashStore

    init(configuration: ConsoleConfiguration, client: PostgresClient, registry: MetricsRegistry, logger: Logger,
         lookup: (any AppleOrderLookup)?) {
        self.configuration = configuration
        self.client = client
        self.registry = registry
        self.logger = logger
        self.lookup = lookup
        audit = AuditLog(client: client, logger: logger)
        lookups = OrderLookupLog(client: client, audit: audit)
        flashes = FlashStore(client: client)
        users = ConsoleUsers(client: client, hasher: configuration.passwordHasher)
        sessions = SessionStore(client: client, lifetimeSeconds: configuration.sessionSeconds, idleSeconds: configuration.idleSeconds)
        gatekeeper = Gatekeeper(configuration: configuration, sessions: sessions, users: users, audit: audit, logger: logger)
        throttle = LoginThrottle(client: client, limits: configuration.throttle)
        hashing = PasswordHashing()
        desk = SupportDesk(client: client, metrics: SettlementMetrics(registry: registry), logger: logger)
    }

    func router() -> HTTPRouter {
        var router = HTTPRouter()
        router.get("/static/console.css") { _, _ in Responses.asset(StaticAssets.stylesheet, contentType: "text/css; charset=utf-8") }
        router.get("/static/console.js") { _, _ in Responses.asset(StaticAssets.script, contentType: "text/javascript; charset=utf-8") }
        router.get("/metrics") { [registry] _, _ in
            HTTPResponse.text(status: 200, registry.render(), contentType: MetricsRegistry.prometheusContentType)
        }
        router.get("/healthz") { _, _ in HTTPResponse.json(status: 200, Array(#"{"status":"ok"}"#.utf8)) }
        addSignIn(to: &router)
        addReadPages(to: &router)
        addActions(to: &router)
        return router
    }
}

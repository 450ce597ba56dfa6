import HTTP
import Observability
import Postgres

/// The `receipt-worker ingest --listen ADDR` process: the API on an `HTTPServer`, with request
/// metrics wired through the server's completion hook. The caller owns (and closes) the client.
public final class IngestServer: Sendable {
    public struct Configuration: Sendable {
        /// Address, body limit (`--max-body`, default 4 MiB) and timeouts.
        public var http: HTTPServerConfiguration
        /// `INGEST_TOKEN`.
        public var token: String

        public init(http: HTTPServerConfiguration = HTTPServerConfiguration(), token: String) {
            self.http = http
            self.token = token
        }

        /// `listen` is "127.0.0.1:8080", "[::1]:8080", ":8080" or "0.0.0.0:0"; throws
        /// `HTTPServerError.invalidListenAddress`.
        public init(listen: String, token: String, maxBodyBytes: Int = 4 * 1024 * 1024) throws {
            var http = try HTTPServerConfiguration(listen: listen)
            http.maxBodyBytes = maxBodyBytes
            self.init(http: http, token: token)
        }
    }

    public let api: IngestAPI
    private let server: HTTPServer
    private let logger: Logger

    /// Throws `IngestConfigurationError.emptyToken` for an empty token.
    public init(configuration: Configuration, database: PostgresClient,
                metrics: MetricsRegistry = MetricsRegistry(), logger: Logger = Logger()) throws {
        let ingestMetrics = IngestMetrics(registry: metrics)
        api = IngestAPI(store: JobStore(client: database),
                        authenticator: try BearerTokenAuthenticator(token: configuration.token),
                        metrics: ingestMetrics, logger: logger)
        var http = configuration.http
        let previousHook = http.onRequestCompleted
        http.onRequestCompleted = { method, route, status, seconds in
            ingestMetrics.recordRequest(method: method, route: route, status: status, durationSeconds: seconds)
            previousHook?(method, route, status, seconds)
        }
        server = HTTPServer(configuration: http, router: api.router)
        self.logger = logger
    }

    /// Binds and starts serving; returns the bound port (useful with port 0).
    @discardableResult
    public func start() throws -> Int {
        let port = try server.start()
        logger.info("ingest_started", ["host": .string(server.configuration.host), "port": .int(port)])
        return port
    }

    public var port: Int { server.port }

    /// Starts if needed and suspends until shut down; cancelling the task shuts down gracefully.
    public func run() async throws {
        if server.port == 0 { try start() }
        try await server.run()
    }

    /// Stops accepting, lets in-flight requests finish within `grace`, then returns.
    public func shutdown(grace: Duration = .seconds(10)) async {
        await server.shutdown(grace: grace)
        logger.info("ingest_stopped")
    }
}

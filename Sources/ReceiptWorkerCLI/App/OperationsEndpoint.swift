import HTTP
import Observability

/// `/metrics`, `/healthz` (the process is alive) and `/readyz` (it can do work: the
/// database answers and it is not shutting down), on METRICS_LISTEN.
enum OperationsEndpoint {
    static func start(listen: String?, registry: MetricsRegistry, ready: @escaping @Sendable () -> Bool,
                      logger: Logger) throws -> HTTPServer? {
        guard let listen, listen != "off" else { return nil }
        var router = HTTPRouter()
        router.get("/metrics") { _, _ in
            HTTPResponse.text(status: 200, registry.render(), contentType: MetricsRegistry.prometheusContentType)
        }
        router.get("/healthz") { _, _ in HTTPResponse.json(status: 200, Array(#"{"status":"ok"}"#.utf8)) }
        router.get("/readyz") { _, _ in
            ready() ? HTTPResponse.json(status: 200, Array(#"{"status":"ready"}"#.utf8))
                    : HTTPResponse.json(status: 503, Array(#"{"status":"unready"}"#.utf8))
        }
        let server = HTTPServer(configuration: try HTTPServerConfiguration(listen: listen), router: router)
        do {
            let port = try server.start()
            logger.info("metrics_listening", ["address": .string(listen), "port": .int(port)])
        } catch {
            throw UsageError("METRICS_LISTEN (--metrics-listen): cannot listen on \(listen): \(error)")
        }
        return server
    }
}

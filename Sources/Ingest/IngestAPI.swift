import HTTP
import Observability
import Postgres

/// Every endpoint of the ingest API as an `HTTPRouter`. Order of checks on `/v1/*`: token, body, database;
/// a job is acknowledged only after its enqueue committed. No handler throws: bad input is a 4xx,
/// a database problem a 503, never a 500 carrying internals.
public struct IngestAPI: Sendable {
    enum Route {
        static let receipts = "/v1/receipts"
        static let transactions = "/v1/transactions"
        static let notifications = "/v1/notifications"
        static let job = "/v1/jobs/{id}"
        static let health = "/healthz"
        static let metrics = "/metrics"
    }

    public let store: JobStore
    public let authenticator: BearerTokenAuthenticator
    public let metrics: IngestMetrics
    public let logger: Logger

    public init(store: JobStore, authenticator: BearerTokenAuthenticator, metrics: IngestMetrics, logger: Logger) {
        self.store = store
        self.authenticator = authenticator
        self.metrics = metrics
        self.logger = logger
    }

    public var router: HTTPRouter {
        var router = HTTPRouter()
        router.post(Route.receipts) { request, _ in
            await self.authorized(request, Route.receipts) {
                await self.enqueue(request, Route.receipts, kind: .receipt, status: 202) {
                    try await self.store.enqueue(try ReceiptSubmission(json: request.body))
                }
            }
        }
        router.post(Route.transactions) { request, _ in
            await self.authorized(request, Route.transactions) {
                await self.enqueue(request, Route.transactions, kind: .signedTransaction, status: 202) {
                    try await self.store.enqueue(try TransactionSubmission(json: request.body))
                }
            }
        }
        // Apple posts here without our token; the JWS inside is the proof. Anything but 200 makes it retry.
        router.post(Route.notifications) { request, _ in
            await self.enqueue(request, Route.notifications, kind: .notification, status: 200) {
                try await self.store.enqueue(try NotificationSubmission(json: request.body))
            }
        }
        router.get(Route.job) { request, params in
            await self.authorized(request, Route.job) { await self.jobStatus(params["id"] ?? "") }
        }
        router.get(Route.health) { _, _ in .json(status: 200, Array(#"{"status":"ok"}"#.utf8)) }
        router.get(Route.metrics) { _, _ in
            .text(status: 200, self.metrics.registry.render(), contentType: MetricsRegistry.prometheusContentType)
        }
        return router
    }

    // MARK: - Steps

    private func authorized(_ request: HTTPRequest, _ route: String, _ body: () async -> HTTPResponse) async -> HTTPResponse {
        guard authenticator.isAuthorized(request.header("Authorization")) else {
            var response = rejected(401, route, "missing or invalid bearer token", level: .notice)
            response.headers.append(("WWW-Authenticate", "Bearer"))
            return response
        }
        return await body()
    }

    /// Validation errors thrown by `work` become 400s; database errors 503s.
    private func enqueue(_ request: HTTPRequest, _ route: String, kind: IngestJobKind, status: Int,
                         _ work: () async throws -> EnqueueResult) async -> HTTPResponse {
        do {
            let result = try await work()
            metrics.recordEnqueued(kind, result)
            return .json(status: status, JSONText.object(["job_id": .int(result.jobID)]))
        } catch let error as IngestValidationError {
            return rejected(400, route, error.message)
        } catch {
            return databaseFailure(error, route)
        }
    }

    private func jobStatus(_ idText: String) async -> HTTPResponse {
        guard !idText.isEmpty, idText.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
              let id = Int64(idText), id > 0 else {
            return rejected(400, Route.job, "job id must be a positive integer")
        }
        do {
            guard let status = try await store.status(jobID: id) else { return .error(status: 404, "job not found") }
            return .json(status: 200, status.json)
        } catch {
            return databaseFailure(error, Route.job)
        }
    }

    private func rejected(_ status: Int, _ route: String, _ reason: String, level: LogLevel = .debug) -> HTTPResponse {
        // A flood of bad requests must not flood the log: 400s at debug. Never the body, only the reason.
        logger.log(level, "ingest_rejected", ["status": .int(status), "route": .string(route), "reason": .string(reason)])
        return .error(status: status, reason)
    }

    /// The server's messages can quote values (receipts are secrets), so only the kind and
    /// SQLSTATE are logged; the client learns nothing but "database unavailable".
    private func databaseFailure(_ error: any Error, _ route: String) -> HTTPResponse {
        let postgres = error as? PostgresError
        logger.error("ingest_database_error", [
            "route": .string(route),
            "kind": .string(postgres.map { "\($0.kind)" } ?? "other"),
            "sqlstate": .string(postgres?.sqlState ?? "-"),
        ])
        var response = HTTPResponse.error(status: 503, "database unavailable")
        response.headers.append(("Retry-After", "1"))
        return response
    }
}

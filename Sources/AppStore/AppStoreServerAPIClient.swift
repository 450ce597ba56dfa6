import Foundation
import HTTP

/// The App Store Server API: Get Transaction Info (production first, the sandbox when
/// production answers 4040010), Get Notification History, Send Consumption Information (v2) and Look
/// Up Order ID. Every request first takes a grant from the fleet limiter; a 429 pauses the whole
/// fleet for Apple's Retry-After. Never throws and never logs; the bearer token is minted per request
/// and appears nowhere but the Authorization header.
public final class AppStoreServerAPIClient: Sendable {
    public let configuration: AppStoreServerAPIConfiguration
    private let transport: HTTPTransport
    private let observer: AppleRequestObserver
    private let limiter: AppStoreRateLimiter

    /// - Parameter transport: defaults to the socket transport (http to loopback, https with verified TLS); plain http
    ///   reaches loopback hosts only.
    /// - Parameter limiter: the fleet limit every request waits for (none by default).
    public init(configuration: AppStoreServerAPIConfiguration, transport: HTTPTransport? = nil,
                observer: AppleRequestObserver = NoAppleRequestObserver(),
                limiter: AppStoreRateLimiter = UnlimitedRateLimiter()) throws {
        try configuration.validate()
        self.configuration = configuration
        self.transport = try AppleTransport.make(transport)
        self.observer = observer
        self.limiter = limiter
    }

    // MARK: the four endpoints

    public func getTransactionInfo(transactionID: String) async -> AppStoreServerAPIResult {
        guard Self.isSafePathSegment(transactionID) else {
            return .rejected(reason: "invalid_transaction_id", status: nil, detail: "transaction id is empty, too long or has invalid characters")
        }
        var result = await transactionInfo(transactionID, on: .production)
        if case .failure(let error) = result, error.kind == .notFound, configuration.sandboxFallback {
            result = await transactionInfo(transactionID, on: .sandbox)
        }
        switch result {
        case .success(let found): return found
        case .failure(let error): return AppStoreServerAPIResult(error)
        }
    }

    /// One page of the notifications Apple sent (or failed to send) in the request's span.
    public func getNotificationHistory(_ request: NotificationHistoryRequest, paginationToken: String?,
                                       environment: AppleEnvironment = .production) async -> Result<NotificationHistoryResponse, AppStoreAPIError> {
        let body = Self.encode(request)
        let query = paginationToken.map { [URLQueryItem(name: "paginationToken", value: $0)] } ?? []
        return await decoded(NotificationHistoryResponse.self, family: .notificationHistory, method: "POST",
                             path: "inApps/v1/notifications/history", query: query, body: body, on: environment)
    }

    /// Answers a CONSUMPTION_REQUEST. Apple refuses a request without the buyer's consent, so none is sent.
    public func sendConsumptionInformation(transactionID: String, _ request: ConsumptionRequest,
                                           environment: AppleEnvironment = .production) async -> Result<Void, AppStoreAPIError> {
        guard Self.isSafePathSegment(transactionID) else {
            return .failure(AppStoreAPIError(.rejected, reason: "invalid_transaction_id", status: nil, detail: "transaction id has invalid characters"))
        }
        guard request.customerConsented else {
            return .failure(AppStoreAPIError(.rejected, reason: "no_consent", status: nil, detail: "the buyer did not consent: nothing is sent"))
        }
        let result = await send(.consumption, method: "PUT", path: "inApps/v2/transactions/consumption/\(transactionID)",
                                body: Self.encode(request), on: environment)
        return result.map { _ in () }
    }

    /// The transactions of the order id on the buyer's e-mailed receipt (production only: sandbox purchases have none).
    public func lookUpOrderID(_ orderID: String) async -> Result<OrderLookupResponse, AppStoreAPIError> {
        guard Self.isSafePathSegment(orderID) else {
            return .failure(AppStoreAPIError(.rejected, reason: "invalid_order_id", status: nil,
                                             detail: "an Apple order id is letters and digits, like MK5TTTVWJH"))
        }
        return await decoded(OrderLookupResponse.self, family: .orderLookup, method: "GET", path: "inApps/v1/lookup/\(orderID)",
                             on: .production)
    }

    /// One page of Get Transaction History (v2): the customer's transactions, found through any one of
    /// their transaction ids; `revision` is the previous page's, nil for the first.
    public func getTransactionHistory(transactionID: String, revision: String?,
                                      environment: AppleEnvironment = .production) async -> Result<TransactionHistoryResponse, AppStoreAPIError> {
        guard Self.isSafePathSegment(transactionID) else {
            return .failure(AppStoreAPIError(.rejected, reason: "invalid_transaction_id", status: nil, detail: "transaction id has invalid characters"))
        }
        let query = [URLQueryItem(name: "sort", value: "ASCENDING")] + (revision.map { [URLQueryItem(name: "revision", value: $0)] } ?? [])
        return await decoded(TransactionHistoryResponse.self, family: .transactionHistory, method: "GET",
                             path: "inApps/v2/history/\(transactionID)", query: query, on: environment)
    }

    // MARK: one request

    private func transactionInfo(_ transactionID: String, on environment: AppleEnvironment) async -> Result<AppStoreServerAPIResult, AppStoreAPIError> {
        let result = await send(.transactionInfo, method: "GET", path: "inApps/v1/transactions/\(transactionID)", on: environment)
        return result.flatMap { body in
            guard let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any],
                  let jws = object["signedTransactionInfo"] as? String, !jws.isEmpty else {
                return .failure(AppStoreAPIError(.retry(after: nil), reason: "malformed_response", status: 200, detail: "no signedTransactionInfo"))
            }
            return .success(.found(signedTransactionInfo: jws, endpoint: environment))
        }
    }

    private func decoded<T: Decodable>(_ type: T.Type, family: AppStoreAPIFamily, method: String, path: String,
                                       query: [URLQueryItem] = [], body: [UInt8] = [],
                                       on environment: AppleEnvironment) async -> Result<T, AppStoreAPIError> {
        await send(family, method: method, path: path, query: query, body: body, on: environment).flatMap { bytes in
            guard let value = try? JSONDecoder().decode(T.self, from: Data(bytes)) else {
                return .failure(AppStoreAPIError(.retry(after: nil), reason: "malformed_response", status: 200,
                                                 detail: "App Store Server API answer could not be read"))
            }
            return .success(value)
        }
    }

    /// Fleet grant, token, request, metrics; the 2xx body or the error Apple's answer means.
    private func send(_ family: AppStoreAPIFamily, method: String, path: String, query: [URLQueryItem] = [], body: [UInt8] = [],
                      on environment: AppleEnvironment) async -> Result<[UInt8], AppStoreAPIError> {
        do {
            if case .deferred(let wait) = try await limiter.acquire(family, maxWait: configuration.rateLimitMaxWait) {
                observer.appStoreAPIThrottled(family: family.rawValue, source: "fleet_limit")
                return .failure(AppStoreAPIError(.retry(after: wait), reason: "fleet_rate_limit", status: nil,
                                                 detail: "the fleet's App Store Server API budget is used up for now"))
            }
        } catch {
            return .failure(AppStoreAPIError(.retry(after: nil), reason: "rate_limiter_unavailable", status: nil,
                                             detail: "the fleet rate limiter could not be reached"))
        }
        let token: String
        do {
            token = try AppStoreJWT.make(issuerID: configuration.issuerID, keyID: configuration.keyID,
                                         bundleID: configuration.bundleID, key: configuration.privateKey,
                                         lifetime: configuration.tokenLifetime)
        } catch {
            return .failure(AppStoreAPIError(.configError, reason: "token", status: 0,
                                             detail: "cannot sign the App Store Server API token: \(error.operation)"))
        }
        let base = environment == .production ? configuration.productionURL : configuration.sandboxURL
        var headers: HTTPHeaderFields = [("Authorization", "Bearer \(token)"), ("Accept", "application/json")]
        if !body.isEmpty { headers.append(("Content-Type", "application/json")) }
        let request = HTTPClientRequest(method: method, url: Self.url(base, path, query), headers: headers, body: body)
        let clock = ContinuousClock()
        let started = clock.now
        let (result, label) = await exchange(request, endpoint: environment)
        observer.appleRequestFinished(endpoint: "server_api_\(environment.rawValue.lowercased())", result: label,
                                      seconds: started.duration(to: clock.now).seconds)
        observer.appStoreAPIRequestFinished(endpoint: family.rawValue, result: label)
        if case .failure(let error) = result, error.reason == "rate_limited" {
            observer.appStoreAPIThrottled(family: family.rawValue, source: "apple_429")
            // The whole fleet waits, not only this process.
            try? await limiter.pause(family, for: error.retryAfter ?? .seconds(1))
        }
        return result
    }

    /// The result plus a bounded metric label.
    private func exchange(_ request: HTTPClientRequest, endpoint: AppleEnvironment) async -> (Result<[UInt8], AppStoreAPIError>, String) {
        let response: HTTPClientResponse
        do {
            response = try await transport.send(request, timeout: configuration.requestTimeout)
        } catch {
            let failure = AppleTransport.describe(error)
            return (.failure(AppStoreAPIError(.retry(after: nil), reason: failure.reason, status: nil, detail: failure.reason)), failure.label)
        }
        for name in ["Deprecation", "Sunset"] {
            if let value = response.header(name) { observer.appleDeprecationNotice(header: name, value: value) }
        }
        if (200..<300).contains(response.status) { return (.success(response.body), "ok") }
        let body = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any]
        let code = (body?["errorCode"] as? NSNumber)?.intValue
        let label = code.map(AppStoreServerAPIErrorCodes.label) ?? "http_\(response.status)"
        return (.failure(Self.error(status: response.status, code: code, retryAfterHeader: response.header("Retry-After"),
                                    endpoint: endpoint)), label)
    }

    /// What Apple's non-2xx answer means.
    static func error(status: Int, code: Int?, retryAfterHeader: String?, endpoint: AppleEnvironment) -> AppStoreAPIError {
        let http = "App Store Server API answered HTTP \(status)\(code.map { " error \($0)" } ?? "")"
        switch (status, code) {
        case (_, AppStoreServerAPIErrorCodes.transactionIDNotFound?):
            return AppStoreAPIError(.notFound, reason: "transaction_not_found", status: code,
                                    detail: "App Store Server API 4040010: transaction id not found (\(endpoint.rawValue))")
        case (429, _):
            return AppStoreAPIError(.retry(after: AppStoreServerAPIErrorCodes.retryAfter(retryAfterHeader)), reason: "rate_limited",
                                    status: code ?? 429, detail: http)
        case (_, let code?) where AppStoreServerAPIErrorCodes.retryable.contains(code):
            return AppStoreAPIError(.retry(after: nil), reason: "api_\(code)", status: code, detail: http)
        case (401, _), (403, _):
            return AppStoreAPIError(.configError, reason: "credentials_refused", status: status,
                                    detail: "App Store Server API refused our credentials (HTTP \(status)): check APPSTORE_ISSUER_ID, APPSTORE_KEY_ID and APPSTORE_PRIVATE_KEY_FILE")
        case (500..., _):
            return AppStoreAPIError(.retry(after: status == 503 ? RetryAfter.parse(retryAfterHeader) : nil), reason: "http_\(status)",
                                    status: code ?? status, detail: http)
        case (400..<500, let code):
            var reason = "api_rejected"
            if let code { reason = code == AppStoreServerAPIErrorCodes.invalidTransactionID ? "invalid_transaction_id" : "api_\(code)" }
            return AppStoreAPIError(.rejected, reason: reason, status: code ?? status, detail: http)
        default:
            return AppStoreAPIError(.retry(after: nil), reason: "http_\(status)", status: status, detail: http)
        }
    }

    // MARK: helpers

    private static func url(_ base: URL, _ path: String, _ query: [URLQueryItem]) -> URL {
        let url = base.appendingPathComponent(path)
        guard !query.isEmpty, var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return url }
        components.queryItems = query
        // A pagination token is opaque base64: "+" and "/" must arrive as themselves.
        components.percentEncodedQuery = components.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%2B")
        return components.url ?? url
    }

    private static func encode<T: Encodable>(_ value: T) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(value)).map { [UInt8]($0) } ?? []  // these bodies always encode
    }

    /// Apple's ids are digits (order ids letters and digits); anything outside a safe alphabet would be a path injection.
    static func isSafePathSegment(_ id: String) -> Bool {
        guard (1...64).contains(id.utf8.count) else { return false }
        return id.utf8.allSatisfy { (byte: UInt8) -> Bool in byte.isASCIIAlphanumeric || byte == 0x2D || byte == 0x5F }  // "-", "_"
    }
}

extension AppStoreServerAPIResult {
    init(_ error: AppStoreAPIError) {
        switch error.kind {
        case .notFound: self = .notFound(detail: error.detail)
        case .retry(let after): self = .retry(reason: error.reason, status: error.status, retryAfter: after)
        case .rejected: self = .rejected(reason: error.reason, status: error.status, detail: error.detail)
        case .configError: self = .configError(status: error.status ?? 0, detail: error.detail)
        }
    }
}

private extension UInt8 {
    var isASCIIAlphanumeric: Bool { (0x30...0x39).contains(self) || (0x41...0x5A).contains(self) || (0x61...0x7A).contains(self) }
}

import Foundation
import HTTP

/// Calls the App Store Server API's Get Transaction Info (SPEC §5.6): production first, the
/// sandbox when production answers 4040010. Never throws and never logs; the bearer token is
/// minted per request and appears nowhere but the Authorization header.
public final class AppStoreServerAPIClient: Sendable {
    public let configuration: AppStoreServerAPIConfiguration
    private let transport: HTTPTransport
    private let observer: AppleRequestObserver

    /// - Parameter transport: defaults to the socket transport (http to loopback, https with verified TLS); plain http
    ///   reaches loopback hosts only.
    public init(configuration: AppStoreServerAPIConfiguration, transport: HTTPTransport? = nil,
                observer: AppleRequestObserver = NoAppleRequestObserver()) throws {
        try configuration.validate()
        self.configuration = configuration
        self.transport = try AppleTransport.make(transport)
        self.observer = observer
    }

    public func getTransactionInfo(transactionID: String) async -> AppStoreServerAPIResult {
        // Apple's ids are digits; anything outside a safe alphabet would be a path injection.
        guard (1...64).contains(transactionID.utf8.count),
              transactionID.utf8.allSatisfy({ $0.isASCIIAlphanumeric || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") }) else {
            return .rejected(reason: "invalid_transaction_id", status: nil, detail: "transaction id is empty, too long or has invalid characters")
        }
        let production = await call(transactionID, on: .production)
        guard case .notFound = production, configuration.sandboxFallback else { return production }
        return await call(transactionID, on: .sandbox)
    }

    private func call(_ transactionID: String, on endpoint: AppleEnvironment) async -> AppStoreServerAPIResult {
        let base = endpoint == .production ? configuration.productionURL : configuration.sandboxURL
        let token: String
        do {
            token = try AppStoreJWT.make(issuerID: configuration.issuerID, keyID: configuration.keyID,
                                         bundleID: configuration.bundleID, key: configuration.privateKey,
                                         lifetime: configuration.tokenLifetime)
        } catch {
            return .configError(status: 0, detail: "cannot sign the App Store Server API token: \(error.operation)")
        }
        let request = HTTPClientRequest(method: "GET", url: base.appendingPathComponent("inApps/v1/transactions/\(transactionID)"),
                                        headers: [("Authorization", "Bearer \(token)"), ("Accept", "application/json")])
        let clock = ContinuousClock()
        let started = clock.now
        let (result, label) = await exchange(request, endpoint: endpoint)
        let elapsed = started.duration(to: clock.now).components
        observer.appleRequestFinished(endpoint: "server_api_\(endpoint.rawValue.lowercased())", result: label,
                                      seconds: Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18)
        return result
    }

    /// The result plus a bounded metric label.
    private func exchange(_ request: HTTPClientRequest, endpoint: AppleEnvironment) async -> (AppStoreServerAPIResult, String) {
        let response: HTTPClientResponse
        do {
            response = try await transport.send(request, timeout: configuration.requestTimeout)
        } catch {
            let failure = AppleTransport.describe(error)
            return (.retry(reason: failure.reason, status: nil, retryAfter: nil), failure.label)
        }
        for name in ["Deprecation", "Sunset"] {
            if let value = response.header(name) { observer.appleDeprecationNotice(header: name, value: value) }
        }
        let body = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any]
        if response.status == 200 {
            guard let jws = body?["signedTransactionInfo"] as? String, !jws.isEmpty else {
                return (.retry(reason: "malformed_response", status: 200, retryAfter: nil), "malformed")
            }
            return (.found(signedTransactionInfo: jws, endpoint: endpoint), "ok")
        }
        let code = (body?["errorCode"] as? NSNumber)?.intValue
        let label = code.map(AppStoreServerAPIErrorCodes.label) ?? "http_\(response.status)"
        switch (response.status, code) {
        case (_, AppStoreServerAPIErrorCodes.transactionIDNotFound?):
            return (.notFound(detail: "App Store Server API 4040010: transaction id not found (\(endpoint.rawValue))"), label)
        case (429, _):
            return (.retry(reason: "rate_limited", status: code ?? 429,
                           retryAfter: AppStoreServerAPIErrorCodes.retryAfter(response.header("Retry-After"))), label)
        case (_, let code?) where AppStoreServerAPIErrorCodes.retryable.contains(code):
            return (.retry(reason: "api_\(code)", status: code, retryAfter: nil), label)
        case (401, _), (403, _):
            return (.configError(status: response.status, detail: "App Store Server API refused our credentials (HTTP \(response.status)): check APPSTORE_ISSUER_ID, APPSTORE_KEY_ID and APPSTORE_PRIVATE_KEY_FILE"), label)
        case (500..., _):
            return (.retry(reason: "http_\(response.status)", status: code ?? response.status,
                           retryAfter: response.status == 503 ? RetryAfter.parse(response.header("Retry-After")) : nil), label)
        case (400..<500, let code):
            return (.rejected(reason: code == AppStoreServerAPIErrorCodes.invalidTransactionID ? "invalid_transaction_id" : "api_rejected",
                              status: code ?? response.status,
                              detail: "App Store Server API answered HTTP \(response.status)\(code.map { " error \($0)" } ?? "")"), label)
        default:
            return (.retry(reason: "http_\(response.status)", status: response.status, retryAfter: nil), label)
        }
    }
}

private extension UInt8 {
    var isASCIIAlphanumeric: Bool { (0x30...0x39).contains(self) || (0x41...0x5A).contains(self) || (0x61...0x7A).contains(self) }
}

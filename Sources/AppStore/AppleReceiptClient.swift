import Foundation
import HTTP
import JSONWire

/// Calls verifyReceipt and turns Apple's answer into a `ReceiptVerdict`.
/// One instance (one long-lived transport with its connection pool) serves all jobs of a process.
/// It never throws and never logs: every failure becomes a verdict whose texts are safe to store.
public final class AppleReceiptClient: Sendable {
    public let configuration: ReceiptVerifierConfiguration
    private let transport: HTTPTransport
    private let observer: AppleRequestObserver

    enum Endpoint: String { case production, sandbox }

    /// - Parameter transport: defaults to the socket transport (http to loopback, https with verified TLS). Any transport
    ///   given is wrapped so plain http still reaches loopback hosts only.
    public init(configuration: ReceiptVerifierConfiguration, transport: HTTPTransport? = nil,
                observer: AppleRequestObserver = NoAppleRequestObserver()) throws {
        try configuration.validate()
        self.configuration = configuration
        self.transport = try AppleTransport.make(transport, idleConnectionsPerHost: configuration.idleConnectionsPerHost)
        self.observer = observer
    }

    /// `attempt` is 1-based and counts this call; `maxAttempts` is the job's round size.
    // Every async frame on the way to the socket stays allocated while Apple takes its seconds, so
    // the waiting path is kept to two small frames here: what runs before or after the wait is in
    // synchronous functions kept out of line (inlined, their locals would join the frame).
    public func verify(receiptData: String, attempt: Int, maxAttempts: Int) async -> ReceiptVerdict {
        let body = requestBody(receiptData)
        let production = await post(body, to: .production)
        if case .answer(let answer) = production, answer.status == AppleStatusCodes.sandboxReceiptSentToProduction {
            guard configuration.allowSandbox else {
                return .rejected(outcome: .sandboxRejected, appleStatus: answer.status,
                                 detail: "Apple status 21007: a sandbox receipt, and sandbox receipts are not allowed")
            }
            return conclude(await post(body, to: .sandbox), from: .sandbox, attempt: attempt, maxAttempts: maxAttempts)
        }
        return conclude(production, from: .production, attempt: attempt, maxAttempts: maxAttempts)
    }

    // MARK: one exchange

    @inline(never)
    private func requestBody(_ receiptData: String) -> [UInt8] {
        let secret = configuration.sharedSecret.flatMap { $0.isEmpty ? nil : $0 }
        return VerifyReceiptRequestBody(receiptData: receiptData, password: secret).json
    }

    private enum Exchange {
        /// Boxed: an answer inline would size every frame that holds an exchange.
        indirect case answer(VerifyReceiptResponseBody)
        case failed(ReceiptVerdict)
    }

    @inline(never)
    private func conclude(_ exchange: Exchange, from endpoint: Endpoint, attempt: Int, maxAttempts: Int) -> ReceiptVerdict {
        switch exchange {
        case .answer(let answer): interpret(answer, from: endpoint, attempt: attempt, maxAttempts: maxAttempts)
        case .failed(let verdict): verdict
        }
    }

    private func post(_ body: [UInt8], to endpoint: Endpoint) async -> Exchange {
        let started = ContinuousClock.now
        let result: Result<HTTPClientResponse, Error>
        do {
            result = .success(try await transport.send(request(body, to: endpoint), timeout: configuration.requestTimeout))
        } catch {
            result = .failure(error)
        }
        return observed(result, from: endpoint, after: started)
    }

    @inline(never)
    private func request(_ body: [UInt8], to endpoint: Endpoint) -> HTTPClientRequest {
        HTTPClientRequest(method: "POST", url: endpoint == .production ? configuration.productionURL : configuration.sandboxURL,
                          headers: [("Content-Type", "application/json"), ("Accept", "application/json")], body: body)
    }

    /// The exchange, reported to the observer with its result label and duration.
    @inline(never)
    private func observed(_ result: Result<HTTPClientResponse, Error>, from endpoint: Endpoint,
                          after started: ContinuousClock.Instant) -> Exchange {
        let (exchange, label) = Self.exchange(result)
        let elapsed = (ContinuousClock.now - started).components
        observer.appleRequestFinished(endpoint: endpoint.rawValue, result: label,
                                      seconds: Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18)
        if case .success(let response) = result {
            for name in ["Deprecation", "Sunset"] {
                if let value = response.header(name) { observer.appleDeprecationNotice(header: name, value: value) }
            }
        }
        return exchange
    }

    /// The exchange plus the observer's result label.
    @inline(never)
    private static func exchange(_ result: Result<HTTPClientResponse, Error>) -> (Exchange, String) {
        let response: HTTPClientResponse
        switch result {
        case .success(let received): response = received
        case .failure(let error):
            let (reason, label) = AppleTransport.describe(error)
            return (.failed(.retry(reason: reason, appleStatus: nil, retryAfter: nil)), label)
        }
        guard response.status == 200 else {
            let retryAfter = [429, 503].contains(response.status) ? RetryAfter.parse(response.header("Retry-After")) : nil
            let label = "http_\(response.status)"
            return (.failed(.retry(reason: label, appleStatus: response.status, retryAfter: retryAfter)), label)
        }
        // Not JSON, or JSON without a usable status: Apple (or something in between) is not well.
        guard let answer = (try? JSONValue.parse(response.body)).flatMap(VerifyReceiptResponseBody.init(json:)) else {
            return (.failed(.retry(reason: "malformed_response", appleStatus: nil, retryAfter: nil)), "malformed")
        }
        return (.answer(answer), AppleStatusCodes.resultLabel(answer.status))
    }

    // MARK: interpreting a decoded answer

    private func interpret(_ answer: VerifyReceiptResponseBody, from endpoint: Endpoint,
                           attempt: Int, maxAttempts: Int) -> ReceiptVerdict {
        let status = answer.status
        // 21006 (expired subscription) still carries a valid, decoded receipt.
        guard status == AppleStatusCodes.ok || status == AppleStatusCodes.subscriptionExpired else {
            if status == AppleStatusCodes.malformedOrTemporary && attempt >= maxAttempts {
                return .rejected(outcome: .invalidReceipt, appleStatus: status,
                                 detail: "Apple status 21002 persisted through \(attempt) attempts")
            }
            switch AppleStatusCodes.classify(status, isRetryable: answer.isRetryable == true, fromSandbox: endpoint == .sandbox) {
            case .retry(let reason): return .retry(reason: reason, appleStatus: status, retryAfter: nil)
            case .invalidReceipt(let detail): return .rejected(outcome: .invalidReceipt, appleStatus: status, detail: detail)
            case .configError(let detail): return .configError(appleStatus: status, detail: detail)
            }
        }
        guard let receipt = answer.receipt else {
            return .retry(reason: "malformed_response", appleStatus: status, retryAfter: nil)
        }
        // The endpoint is the stronger evidence, but a production answer labelled Sandbox is
        // treated as sandbox too: accepting a free purchase is the costly mistake.
        let environment: AppleEnvironment =
            endpoint == .sandbox || answer.environment?.lowercased() == "sandbox" ? .sandbox : .production
        if environment == .sandbox && !configuration.allowSandbox {
            return .rejected(outcome: .sandboxRejected, appleStatus: status, detail: "receipt is from the sandbox environment")
        }
        guard receipt.bundleID == configuration.bundleID else {
            return .rejected(outcome: .wrongBundle, appleStatus: status,
                             detail: "receipt bundle id \(receipt.bundleID ?? "(none)") is not \(configuration.bundleID)")
        }
        let transactions: [AppleTransaction]
        do {
            transactions = try ReceiptTransactions.make(receipt.inApp, environment: environment)
        } catch {
            return .retry(reason: "malformed_response", appleStatus: status, retryAfter: nil)
        }
        if transactions.isEmpty {
            // Right after a purchase Apple may not list it yet.
            if attempt < 3 && attempt < maxAttempts {
                return .retry(reason: "empty_in_app", appleStatus: status, retryAfter: nil)
            }
            return .rejected(outcome: .noPurchase, appleStatus: status, detail: "receipt lists no in-app purchase")
        }
        return .verified(VerifiedReceipt(bundleID: configuration.bundleID, environment: environment, transactions: transactions))
    }
}

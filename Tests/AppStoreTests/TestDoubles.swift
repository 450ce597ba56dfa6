import AppStore
import Foundation
import HTTP
import Synchronization

/// An `HTTPTransport` that answers from a script and remembers every request.
final class ScriptedTransport: HTTPTransport {
    typealias Script = @Sendable (HTTPClientRequest) throws -> HTTPClientResponse
    private let script: Script
    private let sent = Mutex<[HTTPClientRequest]>([])

    init(_ script: @escaping Script) { self.script = script }

    var requests: [HTTPClientRequest] { sent.withLock { $0 } }

    func send(_ request: HTTPClientRequest, timeout: Duration) async throws -> HTTPClientResponse {
        sent.withLock { $0.append(request) }
        return try script(request)
    }

    /// Answers production and sandbox URLs differently (sandbox URLs contain "sandbox").
    static func byEndpoint(production: HTTPClientResponse, sandbox: HTTPClientResponse? = nil) -> ScriptedTransport {
        ScriptedTransport { request in
            request.url.absoluteString.contains("sandbox") ? (sandbox ?? production) : production
        }
    }
}

final class RecordingObserver: AppleRequestObserver {
    private let calls = Mutex<(requests: [String], notices: [String])>(([], []))

    var requests: [String] { calls.withLock { $0.requests } }
    var notices: [String] { calls.withLock { $0.notices } }

    func appleRequestFinished(endpoint: String, result: String, seconds: Double) {
        calls.withLock { $0.requests.append("\(endpoint):\(result)") }
    }

    func appleDeprecationNotice(header: String, value: String) {
        calls.withLock { $0.notices.append("\(header)=\(value)") }
    }
}

enum Fixtures {
    static let bundleID = "com.example.game"
    static let productionURL = URL(string: "http://127.0.0.1:9/verifyReceipt")!
    static let sandboxURL = URL(string: "http://127.0.0.1:9/sandbox/verifyReceipt")!

    static func configuration(secret: String? = nil, allowSandbox: Bool = false,
                              timeout: Duration = .seconds(5)) -> ReceiptVerifierConfiguration {
        ReceiptVerifierConfiguration(productionURL: productionURL, sandboxURL: sandboxURL, sharedSecret: secret,
                                     allowSandbox: allowSandbox, bundleID: bundleID, requestTimeout: timeout)
    }

    static func entry(_ id: String, product: String = "coins_100", quantity: Any = "1",
                      extra: [String: Any] = [:]) -> [String: Any] {
        var e: [String: Any] = ["transaction_id": id, "original_transaction_id": id, "product_id": product,
                                "quantity": quantity, "purchase_date_ms": "1763700000000",
                                "purchase_date": "2025-11-21 04:40:00 Etc/GMT", "is_trial_period": "false"]
        e.merge(extra) { $1 }
        return e
    }

    static func json(_ object: [String: Any], status: Int = 200, headers: HTTPHeaderFields = []) -> HTTPClientResponse {
        HTTPClientResponse(status: status, headers: [("Content-Type", "application/json")] + headers,
                           body: [UInt8](try! JSONSerialization.data(withJSONObject: object)))
    }

    static func receipt(status: Any = 0, environment: String = "Production", bundle: String = bundleID,
                        inApp: [[String: Any]] = [entry("1000000001")], extra: [String: Any] = [:]) -> HTTPClientResponse {
        var object: [String: Any] = ["status": status, "environment": environment,
                                     "receipt": ["bundle_id": bundle, "receipt_type": "Production", "in_app": inApp]]
        object.merge(extra) { $1 }
        return json(object)
    }

    static func status(_ status: Int, extra: [String: Any] = [:]) -> HTTPClientResponse {
        json(["status": status].merging(extra) { $1 })
    }
}

extension ReceiptVerdict {
    /// A compact label for assertions: "verified", "retry:timeout", "rejected:wrong_bundle", "config".
    var label: String {
        switch self {
        case .verified: "verified"
        case .retry(let reason, _, _): "retry:\(reason)"
        case .rejected(let outcome, _, _): "rejected:\(outcome.rawValue)"
        case .configError: "config"
        }
    }

    var receipt: VerifiedReceipt? { if case .verified(let r) = self { r } else { nil } }
}

import AppStore
import AppleSim
import Foundation
import HTTP
import XCTest

/// A running simulator plus an `AppleReceiptClient` pointed at it over loopback.
struct SimHarness {
    let sim: AppleSimulator
    let transport: SocketHTTPTransport

    static func start(_ configuration: AppleSimConfiguration = AppleSimConfiguration()) throws -> SimHarness {
        let sim = AppleSimulator(configuration: configuration)
        try sim.start()
        return SimHarness(sim: sim, transport: try SocketHTTPTransport())
    }

    static func start(arguments: [String]) throws -> SimHarness {
        try start(AppleSimConfiguration.parse(arguments: arguments))
    }

    func client(secret: String? = nil, allowSandbox: Bool = false, timeout: Duration = .seconds(5)) throws -> AppleReceiptClient {
        try AppleReceiptClient(
            configuration: ReceiptVerifierConfiguration(productionURL: sim.productionURL, sandboxURL: sim.sandboxURL,
                                                        sharedSecret: secret, allowSandbox: allowSandbox,
                                                        bundleID: Fixtures.bundleID, requestTimeout: timeout),
            transport: transport)
    }

    func verify(_ receipt: String, attempt: Int = 1, maxAttempts: Int = 5, secret: String? = nil,
                allowSandbox: Bool = false, timeout: Duration = .seconds(5)) async throws -> ReceiptVerdict {
        try await client(secret: secret, allowSandbox: allowSandbox, timeout: timeout)
            .verify(receiptData: receipt, attempt: attempt, maxAttempts: maxAttempts)
    }

    /// A raw request to the simulator; returns status and the JSON object of the body (if any).
    @discardableResult
    func call(_ method: String, _ path: String, json: String? = nil) async throws -> (status: Int, body: [String: Any]) {
        let request = HTTPClientRequest(method: method, url: sim.baseURL.appendingPathComponent(path),
                                        headers: [("Content-Type", "application/json")], body: Array((json ?? "").utf8))
        let response = try await transport.send(request, timeout: .seconds(5))
        return (response.status, (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any] ?? [:])
    }

    func stop() async {
        await transport.shutdown()
        await sim.shutdown(grace: .seconds(2))
    }
}

enum SimReceipts {
    static func paid(_ ids: String..., environment: AppleEnvironment = .production, forceStatus: Int? = nil) -> String {
        SimReceipt(bundleID: Fixtures.bundleID, environment: environment,
                   transactions: ids.map { SimReceipt.Transaction(transactionID: $0, productID: "coins_100") },
                   forceStatus: forceStatus).mint()
    }
}

import AppStore
import Foundation
import HTTP

/// HTTP surface of `SimServerAPI`:
/// `GET /inApps/v1/transactions/{id}` (production), `GET /sandbox/inApps/v1/transactions/{id}`,
/// and controls for demos: `POST /sim/storekit/transactions` (a transaction payload → registered
/// and returned signed), `POST /sim/storekit/notifications` (→ a signed notification),
/// `GET /sim/storekit/root.pem` (the signing root, for `APPLE_ROOT_CERTS`).
extension SimServerAPI {
    public func addRoutes(to router: inout HTTPRouter) {
        router.get("/inApps/v1/transactions/{id}") { [self] request, params in
            respond(params["id"] ?? "", request, environment: .production)
        }
        router.get("/sandbox/inApps/v1/transactions/{id}") { [self] request, params in
            respond(params["id"] ?? "", request, environment: .sandbox)
        }
        router.post("/sim/storekit/transactions") { [self] request, _ in mintFromJSON(request.body) }
        router.post("/sim/storekit/notifications") { [self] request, _ in notificationFromJSON(request.body) }
        router.get("/sim/storekit/root.pem") { [self] _, _ in
            .text(status: 200, signingChain.rootPEM, contentType: "application/x-pem-file")
        }
    }

    private func respond(_ id: String, _ request: HTTPRequest, environment: StoreKitEnvironment) -> HTTPResponse {
        switch getTransactionInfo(id: id, authorization: request.header("Authorization"), environment: environment) {
        case .signed(var payload):
            payload.signedDate = Date()  // Apple signs every answer afresh
            guard let jws = try? signingChain.signTransaction(payload) else { return .error(status: 500, "signing failed") }
            return Self.json(["signedTransactionInfo": jws])
        case .status(let status, let code, let headers):
            var response = code.map { Self.json(["errorCode": $0, "errorMessage": Self.message($0)], status: status) }
                ?? HTTPResponse(status: status)
            response.headers += headers.map { (name: $0.0, value: $0.1) }
            return response
        }
    }

    private func mintFromJSON(_ body: [UInt8]) -> HTTPResponse {
        guard let payload = try? JSONDecoder().decode(JWSTransactionPayload.self, from: Data(body)),
              payload.transactionId?.isEmpty == false, payload.productId?.isEmpty == false else {
            return .error(status: 400, "expected a transaction payload with transactionId and productId")
        }
        guard let jws = try? mintTransaction(payload) else { return .error(status: 500, "signing failed") }
        return Self.json(["signedTransactionInfo": jws])
    }

    /// Body: `{"notificationType", "subtype"?, "notificationUUID"?, "bundleId", "appAppleId"?,
    /// "environment"?, "transaction"?: {payload}}`.
    private func notificationFromJSON(_ body: [UInt8]) -> HTTPResponse {
        struct Request: Decodable {
            var notificationType: String
            var subtype: String?
            var notificationUUID: String?
            var bundleId: String
            var appAppleId: Int64?
            var environment: StoreKitEnvironment?
            var transaction: JWSTransactionPayload?
        }
        guard let r = try? JSONDecoder().decode(Request.self, from: Data(body)) else {
            return .error(status: 400, "expected notificationType and bundleId")
        }
        if let transaction = r.transaction { register(transaction) }
        guard let jws = try? signingChain.signNotification(
            type: r.notificationType, subtype: r.subtype, uuid: r.notificationUUID ?? UUID().uuidString,
            transaction: r.transaction, bundleID: r.bundleId, appAppleID: r.appAppleId,
            environment: r.environment ?? .production) else { return .error(status: 500, "signing failed") }
        return Self.json(["signedPayload": jws])
    }

    private static func message(_ code: Int) -> String {
        switch code {
        case 4040010: "Transaction id not found."
        case 4000006: "Invalid transaction id."
        case 4290000: "Rate limit exceeded."
        default: "Error."
        }
    }

    private static func json(_ object: [String: Any], status: Int = 200) -> HTTPResponse {
        .json(status: status, (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8))
    }
}

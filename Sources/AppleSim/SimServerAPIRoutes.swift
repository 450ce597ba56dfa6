import AppStore
import Foundation
import HTTP

/// HTTP surface of `SimServerAPI`:
/// `GET /inApps/v1/transactions/{id}` (production), `GET /sandbox/inApps/v1/transactions/{id}`,
/// and controls for demos: `POST /sim/storekit/transactions` (a transaction payload → registered
/// and returned signed), `POST /sim/storekit/notifications` (→ a signed notification),
/// `GET /sim/storekit/root.pem` (the signing root, for `APPLE_ROOT_CERTS`).
/// Also `POST /inApps/v1/notifications/history` (`?paginationToken=`), `PUT /inApps/v2/transactions/consumption/{id}`
/// (both with `/sandbox` twins) and `GET /inApps/v1/lookup/{orderId}`.
extension SimServerAPI {
    public func addRoutes(to router: inout HTTPRouter) {
        router.get("/inApps/v1/transactions/{id}") { [self] request, params in
            Self.refusedShape(request, query: []) ?? respond(params["id"] ?? "", request, environment: .production)
        }
        router.get("/sandbox/inApps/v1/transactions/{id}") { [self] request, params in
            Self.refusedShape(request, query: []) ?? respond(params["id"] ?? "", request, environment: .sandbox)
        }
        for (prefix, environment) in [("", StoreKitEnvironment.production), ("/sandbox", .sandbox)] {
            router.post("\(prefix)/inApps/v1/notifications/history") { [self] request, _ in
                if let refused = Self.refusedShape(request, query: ["paginationToken"]) { return refused }
                switch notificationHistory(request.body, token: Self.queryValue("paginationToken", in: request.query),
                                           authorization: request.header("Authorization"), environment: environment) {
                case .page(let page): return Self.json(page)
                case .refused(let answer): return Self.response(answer)
                }
            }
            router.add("PUT", "\(prefix)/inApps/v2/transactions/consumption/{id}") { [self] request, params in
                Self.refusedShape(request, query: []) ?? Self.response(consumption(request.body, transactionID: params["id"] ?? "", authorization: request.header("Authorization"),
                                          environment: environment))
            }
        }
        router.get("/inApps/v1/lookup/{orderId}") { [self] request, params in
            if let refused = Self.refusedShape(request, query: []) { return refused }
            switch lookUpOrder(params["orderId"] ?? "", authorization: request.header("Authorization")) {
            case .refused(let answer): return Self.response(answer)
            case .found(let payloads):
                let signed = payloads.compactMap(signedAfresh)
                return Self.json(OrderLookupResponse(status: signed.isEmpty ? OrderLookupResponse.invalid : OrderLookupResponse.valid,
                                                     signedTransactions: signed))
            }
        }
        addSalesReportRoutes(to: &router)
        router.post("/sim/storekit/transactions") { [self] request, _ in mintFromJSON(request.body) }
        router.post("/sim/storekit/notifications") { [self] request, _ in notificationFromJSON(request.body) }
        router.get("/sim/storekit/root.pem") { [self] _, _ in
            .text(status: 200, signingChain.rootPEM, contentType: "application/x-pem-file")
        }
    }

    private func respond(_ id: String, _ request: HTTPRequest, environment: StoreKitEnvironment) -> HTTPResponse {
        let answer = getTransactionInfo(id: id, authorization: request.header("Authorization"), environment: environment)
        switch answer {
        case .signed(let payload):
            guard let jws = signedAfresh(payload) else { return .error(status: 500, "signing failed") }
            return Self.json(["signedTransactionInfo": jws])
        case .status:
            return Self.response(answer)
        }
    }

    /// A transaction as Apple answers it: signed afresh, with this moment's `signedDate`.
    func signedAfresh(_ payload: JWSTransactionPayload) -> String? {
        var fresh = payload
        fresh.signedDate = Date()
        return try? signingChain.signTransaction(fresh)
    }

    /// A status answer as Apple sends it: JSON `errorCode`/`errorMessage` when there is a code.
    static func response(_ answer: Answer) -> HTTPResponse {
        guard case .status(let status, let error, let headers) = answer else { return .error(status: 500, "unexpected answer") }
        var response = error.map { Self.json(["errorCode": $0.code, "errorMessage": $0.message], status: status) }
            ?? HTTPResponse(status: status)
        response.headers += headers.map { (name: $0.0, value: $0.1) }
        return response
    }

    static func queryValue(_ name: String, in query: String?) -> String? {
        queryItems(query).first { $0.name == name }?.value
    }

    private static func queryItems(_ query: String?) -> [URLQueryItem] {
        guard let query else { return [] }
        var components = URLComponents()
        components.percentEncodedQuery = query
        return components.queryItems ?? []
    }

    private static func json<T: Encodable>(_ value: T) -> HTTPResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return .json(status: 200, (try? encoder.encode(value)) ?? Data("{}".utf8))
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

    /// Query parameters the endpoint does not document, or a body on a GET, are refused as Apple refuses a
    /// malformed request (GeneralBadRequestError), so nothing the client adds goes unchecked.
    static func refusedShape(_ request: HTTPRequest, query allowed: Set<String>) -> HTTPResponse? {
        let names = queryItems(request.query).map(\.name)
        let bodyOnGet = request.method == "GET" && !request.body.isEmpty
        guard bodyOnGet || names.contains(where: { !allowed.contains($0) }) || Set(names).count != names.count else { return nil }
        return response(.refused(.generalBadRequest))
    }

    static func json(_ object: [String: Any], status: Int = 200) -> HTTPResponse {
        .json(status: status, (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8))
    }
}

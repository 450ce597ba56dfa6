import AppStore
import Foundation
import HTTP

/// The App Store Connect API's `GET /v1/salesReports` (DAILY SALES SUMMARY only), cut from `salesBook`,
/// and `POST /sim/sales`, which injects a gap: purchases Apple sold that no client ever uploaded.
extension SimServerAPI {
    static let salesReportFilters: Set<String> = ["filter[frequency]", "filter[reportDate]", "filter[reportSubType]",
                                                  "filter[reportType]", "filter[vendorNumber]", "filter[version]"]

    func addSalesReportRoutes(to router: inout HTTPRouter) {
        router.get("/v1/salesReports") { [self] request, _ in salesReport(request) }
        router.post("/sim/sales") { [self] request, _ in injectSales(request.body) }
        for (prefix, environment) in [("", StoreKitEnvironment.production), ("/sandbox", .sandbox)] {
            router.get("\(prefix)/inApps/v2/history/{id}") { [self] request, params in
                if let refused = Self.refusedShape(request, query: ["revision", "sort"]) { return refused }
                switch transactionHistory(params["id"] ?? "", authorization: request.header("Authorization"), environment: environment) {
                case .refused(let answer): return Self.response(answer)
                case .found(let payloads):
                    let signed = payloads.compactMap(signedAfresh)
                    return Self.historyJSON(TransactionHistoryResponse(revision: "sim-r1", hasMore: false, bundleId: payloads.first?.bundleId,
                                                                       environment: environment.rawValue, signedTransactions: signed))
                }
            }
        }
    }

    private static func historyJSON(_ value: TransactionHistoryResponse) -> HTTPResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return .json(status: 200, (try? encoder.encode(value)) ?? Data("{}".utf8))
    }

    static let noSalesDetail = "There were no sales for the date specified."
    static let notYetAvailableDetail = "Report is not available yet. Daily reports for the Americas are available by 8 am Pacific Time."

    func salesReport(_ request: HTTPRequest, now: Date = Date()) -> HTTPResponse {
        func value(_ name: String) -> String? { Self.queryValue(name, in: request.query) }
        if let (status, code) = connectGate(authorization: request.header("Authorization"), vendorNumber: value("filter[vendorNumber]"), now: now) {
            return Self.connectError(status, code, detail: status == 401 ? "Provide a properly configured and signed bearer token" : "vendor number not allowed")
        }
        let names = Self.queryNames(request.query)
        guard names.allSatisfy(Self.salesReportFilters.contains), value("filter[frequency]") == "DAILY", value("filter[reportType]") == "SALES",
              value("filter[reportSubType]") == "SUMMARY", value("filter[vendorNumber]") != nil, [nil, "1_0"].contains(value("filter[version]")),
              let day = value("filter[reportDate]").flatMap(ReportDay.init) else {
            return Self.connectError(400, "PARAMETER_ERROR.INVALID", detail: "apple-sim serves DAILY SALES SUMMARY 1_0 reports for a YYYY-MM-DD reportDate")
        }
        // Apple answers 404 NOT_FOUND both before the day is published and for a day with no sales (a Summary
        // Sales report exists only for a day with at least one unit sold); the detail tells them apart.
        guard let text = salesBook.report(for: day, now: now) else {
            return Self.connectError(404, "NOT_FOUND", detail: Self.notYetAvailableDetail)
        }
        guard text.split(separator: "\n").count > 1 else {
            return Self.connectError(404, "NOT_FOUND", detail: Self.noSalesDetail)
        }
        guard let gzip = try? Gzip.compress(Array(text.utf8)) else { return .error(status: 500, "gzip failed") }
        return HTTPResponse(status: 200, headers: [("Content-Type", "application/a-gzip")], body: gzip)
    }

    /// Body: `{"product_id", "count", "purchase_date_ms"?, "user_id"?, "bundle_id"?}`: `count` purchases Apple sold and
    /// answers Get Transaction Info for, that no client uploaded. Answers their transaction ids.
    func injectSales(_ body: [UInt8]) -> HTTPResponse {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any],
              let product = object["product_id"] as? String, !product.isEmpty,
              let count = (object["count"] as? NSNumber)?.intValue, (1...1_000_000).contains(count) else {
            return .error(status: 400, #"expected {"product_id": "...", "count": N, "purchase_date_ms"?: ms, "user_id"?: "..."}"#)
        }
        let purchased = (object["purchase_date_ms"] as? NSNumber).map { Date(timeIntervalSince1970: $0.doubleValue / 1000) } ?? Date()
        let ids = injectUnuploadedSales(productID: product, count: count, purchaseDate: purchased, appAccountToken: object["user_id"] as? String,
                                          bundleID: object["bundle_id"] as? String)
        return Self.json(["transaction_ids": ids])
    }

    /// In-process twin of `POST /sim/sales`.
    @discardableResult
    public func injectUnuploadedSales(productID: String, count: Int, purchaseDate: Date, appAccountToken: String? = nil,
                                      bundleID: String? = nil) -> [String] {
        (0..<count).map { _ in
            let id = "sim-gap-\(UUID().uuidString.lowercased())"
            let payload = JWSTransactionPayload(transactionId: id, originalTransactionId: id, bundleId: bundleID, productId: productID,
                                                purchaseDate: purchaseDate, originalPurchaseDate: purchaseDate,
                                                appAccountToken: appAccountToken, environment: "Production")
            register(payload)
            recordSale(payload)
            return id
        }
    }

    static func connectError(_ status: Int, _ code: String, detail: String) -> HTTPResponse {
        json(["errors": [["id": UUID().uuidString, "status": String(status), "code": code, "title": code, "detail": detail]]], status: status)
    }

    static func queryNames(_ query: String?) -> [String] {
        guard let query else { return [] }
        var components = URLComponents()
        components.percentEncodedQuery = query
        return components.queryItems?.map(\.name) ?? []
    }
}

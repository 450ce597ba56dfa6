import AppStore
import JSONWire

/// Reads a receipt's JSON with Codable's rules (what `mint()` writes): a required member must
/// have its type, an optional one may be absent or null, and a member of the wrong type rejects
/// the receipt. By hand on `JSONValue`: JSONDecoder is too costly on the simulator's per-request path.
extension SimReceipt {
    init(json: JSONValue) throws(SimReceiptRejected) {
        let members = try StrictMembers(json)
        self.init(bundleID: try members.required("bundle_id", \.stringValue),
                  environment: try members.required("environment") { $0.stringValue.flatMap(AppleEnvironment.init(rawValue:)) },
                  transactions: try members.required("transactions", \.arrayValue).map { item throws(SimReceiptRejected) in
                      try Transaction(json: item)
                  },
                  forceStatus: try members.optional("force_status", \.intValue))
        sim = try members.required("sim", \.intValue)
    }
}

extension SimReceipt.Transaction {
    init(json: JSONValue) throws(SimReceiptRejected) {
        let members = try StrictMembers(json)
        self.init(transactionID: try members.required("transaction_id", \.stringValue),
                  originalTransactionID: try members.optional("original_transaction_id", \.stringValue),
                  productID: try members.required("product_id", \.stringValue),
                  quantity: try members.optional("quantity", \.intValue),
                  purchaseDateMs: try members.optional("purchase_date_ms", \.int64Value),
                  cancellationDateMs: try members.optional("cancellation_date_ms", \.int64Value),
                  cancellationReason: try members.optional("cancellation_reason", \.stringValue),
                  appAccountToken: try members.optional("app_account_token", \.stringValue))
    }
}

struct SimReceiptRejected: Error {}

private struct StrictMembers {
    let object: JSONValue

    init(_ json: JSONValue) throws(SimReceiptRejected) {
        guard case .object = json else { throw SimReceiptRejected() }
        object = json
    }

    func required<T>(_ key: String, _ read: (JSONValue) -> T?) throws(SimReceiptRejected) -> T {
        guard let value = object[key].flatMap(read) else { throw SimReceiptRejected() }
        return value
    }

    func optional<T>(_ key: String, _ read: (JSONValue) -> T?) throws(SimReceiptRejected) -> T? {
        guard let member = object[key], member != .null else { return nil }
        guard let value = read(member) else { throw SimReceiptRejected() }
        return value
    }
}

private extension JSONValue {
    var intValue: Int? { int64Value.flatMap { Int(exactly: $0) } }
}

import JSONWire

/// One `in_app` / `latest_receipt_info` entry exactly as Apple spells it: every value is kept as
/// the string Apple sent (numbers are accepted and turned into strings).
public struct VerifyReceiptInApp: Sendable, Equatable {
    public var quantity: String?
    public var productID: String?
    public var transactionID: String?
    public var originalTransactionID: String?
    public var purchaseDate: String?
    public var purchaseDateMs: String?
    public var cancellationDate: String?
    public var cancellationDateMs: String?
    public var cancellationReason: String?
    public var appAccountToken: String?

    public init(quantity: String? = nil, productID: String? = nil, transactionID: String? = nil,
                originalTransactionID: String? = nil, purchaseDate: String? = nil, purchaseDateMs: String? = nil,
                cancellationDate: String? = nil, cancellationDateMs: String? = nil,
                cancellationReason: String? = nil, appAccountToken: String? = nil) {
        self.quantity = quantity
        self.productID = productID
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.purchaseDate = purchaseDate
        self.purchaseDateMs = purchaseDateMs
        self.cancellationDate = cancellationDate
        self.cancellationDateMs = cancellationDateMs
        self.cancellationReason = cancellationReason
        self.appAccountToken = appAccountToken
    }

    /// nil unless an object; its members are read leniently.
    public init?(json: JSONValue) {
        guard case .object = json else { return nil }
        self.init(quantity: json.lenientString("quantity"), productID: json.lenientString("product_id"),
                  transactionID: json.lenientString("transaction_id"),
                  originalTransactionID: json.lenientString("original_transaction_id"),
                  purchaseDate: json.lenientString("purchase_date"), purchaseDateMs: json.lenientString("purchase_date_ms"),
                  cancellationDate: json.lenientString("cancellation_date"),
                  cancellationDateMs: json.lenientString("cancellation_date_ms"),
                  cancellationReason: json.lenientString("cancellation_reason"),
                  appAccountToken: json.lenientString("app_account_token"))
    }

    /// An array of entries; nil when it is not an array or one element is not an object (the
    /// list is then unusable as a whole, as JSONDecoder would read it).
    static func entries(json: JSONValue) -> [VerifyReceiptInApp]? {
        guard let items = json.arrayValue else { return nil }
        var entries: [VerifyReceiptInApp] = []
        entries.reserveCapacity(items.count)
        for item in items {
            guard let entry = VerifyReceiptInApp(json: item) else { return nil }
            entries.append(entry)
        }
        return entries
    }

    func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.member("quantity", quantity)
        writer.member("product_id", productID)
        writer.member("transaction_id", transactionID)
        writer.member("original_transaction_id", originalTransactionID)
        writer.member("purchase_date", purchaseDate)
        writer.member("purchase_date_ms", purchaseDateMs)
        writer.member("cancellation_date", cancellationDate)
        writer.member("cancellation_date_ms", cancellationDateMs)
        writer.member("cancellation_reason", cancellationReason)
        writer.member("app_account_token", appAccountToken)
        writer.endObject()
    }

    static func write(_ entries: [VerifyReceiptInApp], to writer: inout JSONWriter) {
        writer.beginArray()
        for entry in entries { entry.write(to: &writer) }
        writer.endArray()
    }
}

public struct VerifyReceiptReceipt: Sendable, Equatable {
    public var bundleID: String?
    public var inApp: [VerifyReceiptInApp]

    public init(bundleID: String?, inApp: [VerifyReceiptInApp]) {
        self.bundleID = bundleID
        self.inApp = inApp
    }

    /// nil unless an object whose `in_app` is absent, null or a list of entries.
    public init?(json: JSONValue) {
        guard case .object = json else { return nil }
        var inApp: [VerifyReceiptInApp] = []
        switch json["in_app"] {
        case nil, .null?: break
        case let list?:
            guard let entries = VerifyReceiptInApp.entries(json: list) else { return nil }
            inApp = entries
        }
        self.init(bundleID: json.lenientString("bundle_id"), inApp: inApp)
    }

    func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.member("bundle_id", bundleID)
        writer.key("in_app")
        VerifyReceiptInApp.write(inApp, to: &writer)
        writer.endObject()
    }
}

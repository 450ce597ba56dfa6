import JSONWire

/// The verifyReceipt request body. `password` is the app's shared secret: it travels in the
/// body only, so it is never part of a URL, header or log line.
public struct VerifyReceiptRequestBody: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    public var receiptData: String
    public var password: String?
    public var excludeOldTransactions: Bool

    public init(receiptData: String, password: String? = nil, excludeOldTransactions: Bool = false) {
        self.receiptData = receiptData
        self.password = password
        self.excludeOldTransactions = excludeOldTransactions
    }

    /// nil unless `receipt-data` is a string; the other members are read leniently.
    public init?(json: JSONValue) {
        guard let receiptData = json["receipt-data"]?.stringValue else { return nil }
        self.init(receiptData: receiptData, password: json.lenientString("password"),
                  excludeOldTransactions: json.lenientBool("exclude-old-transactions") ?? false)
    }

    public var json: [UInt8] {
        var writer = JSONWriter(reservingCapacity: receiptData.utf8.count + 96)
        writer.beginObject()
        writer.member("receipt-data", receiptData)
        writer.member("password", password)
        writer.key("exclude-old-transactions")
        writer.bool(excludeOldTransactions)
        writer.endObject()
        return writer.bytes
    }

    /// Hides the secret and the receipt from `print`, interpolation and debuggers' summaries.
    public var description: String {
        "VerifyReceiptRequestBody(receipt-data: <\(receiptData.utf8.count) bytes>, password: <\(password == nil ? "none" : "redacted")>)"
    }
    public var debugDescription: String { description }
}

/// The verifyReceipt response. Only `status` is required; everything else is read tolerantly.
public struct VerifyReceiptResponseBody: Sendable, Equatable {
    public var status: Int
    public var environment: String?
    /// Either `is_retryable` or `is-retryable` on the wire (Apple has used both).
    public var isRetryable: Bool?
    public var receipt: VerifyReceiptReceipt?
    public var latestReceiptInfo: [VerifyReceiptInApp]?

    public init(status: Int, environment: String? = nil, isRetryable: Bool? = nil,
                receipt: VerifyReceiptReceipt? = nil, latestReceiptInfo: [VerifyReceiptInApp]? = nil) {
        self.status = status
        self.environment = environment
        self.isRetryable = isRetryable
        self.receipt = receipt
        self.latestReceiptInfo = latestReceiptInfo
    }

    /// nil without a `status` that reads as an integer (a number or a numeric string).
    public init?(json: JSONValue) {
        guard let status = json.lenientInt("status") else { return nil }
        // A malformed receipt or transaction list, under any status, reads as absent and must
        // not hide the status.
        self.init(status: status, environment: json.lenientString("environment"),
                  isRetryable: json.lenientBool("is_retryable") ?? json.lenientBool("is-retryable"),
                  receipt: json["receipt"].flatMap(VerifyReceiptReceipt.init(json:)),
                  latestReceiptInfo: json["latest_receipt_info"].flatMap(VerifyReceiptInApp.entries(json:)))
    }

    /// Absent values are left out, as Apple does.
    public var json: [UInt8] {
        var writer = JSONWriter(reservingCapacity: 256 + 320 * (receipt?.inApp.count ?? 0))
        writer.beginObject()
        writer.key("status")
        writer.integer(Int64(status))
        writer.member("environment", environment)
        if let isRetryable {
            writer.key("is_retryable")
            writer.bool(isRetryable)
        }
        if let receipt {
            writer.key("receipt")
            receipt.write(to: &writer)
        }
        if let latestReceiptInfo {
            writer.key("latest_receipt_info")
            VerifyReceiptInApp.write(latestReceiptInfo, to: &writer)
        }
        writer.endObject()
        return writer.bytes
    }
}

extension JSONWriter {
    /// A string member, left out when the value is absent (Apple writes no nulls).
    mutating func member(_ name: String, _ value: String?) {
        guard let value else { return }
        key(name)
        string(value)
    }
}

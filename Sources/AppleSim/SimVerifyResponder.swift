import AppStore
import Foundation
import JSONWire

/// The fault-free part of the simulator: what Apple would answer to one verifyReceipt body.
enum SimVerifyResponder {
    enum Endpoint: String { case production, sandbox }

    struct Answer {
        var status: Int
        var body: [UInt8]
        /// Transactions reported as paid (status 0, not cancelled) and as refunded.
        var paid: [String] = []
        var revoked: [String] = []
        /// The receipt's transactions and environment, for the sales report.
        var sales: [SimReceipt.Transaction] = []
        var environment: AppleEnvironment? = nil
    }

    static func answer(_ requestBody: [UInt8], endpoint: Endpoint, sharedSecret: String?) -> Answer {
        guard let request = (try? JSONValue.parse(requestBody)).flatMap(VerifyReceiptRequestBody.init(json:)) else {
            return statusOnly(21000)
        }
        guard let receipt = SimReceipt.parse(base64: request.receiptData) else { return statusOnly(21002) }
        if let forced = receipt.forceStatus { return statusOnly(forced, environment: receipt.environment) }
        switch (endpoint, receipt.environment) {
        case (.production, .sandbox): return statusOnly(21007, environment: .production)
        case (.sandbox, .production): return statusOnly(21008, environment: .sandbox)
        default: break
        }
        if let secret = sharedSecret, request.password != secret { return statusOnly(21004, environment: receipt.environment) }

        let entries = receipt.transactions.map(inApp)
        let response = VerifyReceiptResponseBody(
            status: 0, environment: receipt.environment.rawValue,
            receipt: VerifyReceiptReceipt(bundleID: receipt.bundleID, inApp: entries))
        let cancelled = receipt.transactions.filter { $0.cancellationDateMs != nil }.map(\.transactionID)
        return Answer(status: 0, body: response.json,
                      paid: receipt.transactions.filter { $0.cancellationDateMs == nil }.map(\.transactionID),
                      revoked: cancelled, sales: receipt.transactions, environment: receipt.environment)
    }

    static func statusOnly(_ status: Int, environment: AppleEnvironment? = nil) -> Answer {
        Answer(status: status, body: VerifyReceiptResponseBody(status: status, environment: environment?.rawValue).json)
    }

    /// Apple's entry shape: every value a string.
    private static func inApp(_ t: SimReceipt.Transaction) -> VerifyReceiptInApp {
        func date(_ ms: Int64?) -> String? { ms.map { AppleDates.appleString(Date(timeIntervalSince1970: Double($0) / 1000)) } }
        return VerifyReceiptInApp(
            quantity: String(t.quantity ?? 1), productID: t.productID, transactionID: t.transactionID,
            originalTransactionID: t.originalTransactionID ?? t.transactionID,
            purchaseDate: date(t.purchaseDateMs), purchaseDateMs: t.purchaseDateMs.map(String.init),
            cancellationDate: date(t.cancellationDateMs), cancellationDateMs: t.cancellationDateMs.map(String.init),
            cancellationReason: t.cancellationDateMs == nil ? nil : (t.cancellationReason ?? "0"),
            appAccountToken: t.appAccountToken)
    }
}

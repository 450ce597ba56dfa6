import AppStore
import Foundation
import Synchronization

/// What the simulated App Store sold and refunded: every transaction it answered as paid (verifyReceipt,
/// Get Transaction Info), plus sales injected as a gap (bought, never uploaded). Its Sales and Trends
/// report is cut from this, per Pacific day: a sale on its purchase day, a refund on its refund day.
public final class SimSalesBook: Sendable {
    public struct Sale: Sendable, Equatable {
        public var transactionID: String
        public var productID: String
        public var quantity: Int
        public var purchaseDate: Date
        public var refundDate: Date?
        public var countryCode: String
    }

    private struct State {
        var sales: [String: Sale] = [:]
        var reportDelay: TimeInterval = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// Records an answered transaction once; a later answer can only add its refund.
    public func record(transactionID: String, productID: String, quantity: Int, purchaseDate: Date, refundDate: Date?,
                       countryCode: String = "US") {
        state.withLock { s in
            if var known = s.sales[transactionID] {
                if known.refundDate == nil, let refundDate { known.refundDate = refundDate }
                s.sales[transactionID] = known
            } else {
                s.sales[transactionID] = Sale(transactionID: transactionID, productID: productID, quantity: max(1, quantity),
                                              purchaseDate: purchaseDate, refundDate: refundDate, countryCode: countryCode)
            }
        }
    }

    /// How long after a Pacific day ends its report becomes available (Apple: usually by the next morning).
    public var reportDelay: TimeInterval {
        get { state.withLock { $0.reportDelay } }
        set { state.withLock { $0.reportDelay = newValue } }
    }

    public var sales: [Sale] { state.withLock { Array($0.sales.values) } }

    /// nil while the day's report is not yet available.
    public func report(for day: ReportDay, now: Date = Date()) -> String? {
        let (sales, delay) = state.withLock { (Array($0.sales.values), $0.reportDelay) }
        guard now >= day.end.addingTimeInterval(delay) else { return nil }
        return SimSalesReportText.render(sales, day: day)
    }
}

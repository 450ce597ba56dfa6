import AppStore
import Foundation
import JSONWire

/// One in-app product's day: Apple's units and returns against the ledger's credits and revocations.
public struct ReconciledProduct: Sendable, Equatable {
    public var productID: String
    public var appleUnits: Int
    public var appleReturns: Int
    public var credited: Int
    public var revoked: Int

    public init(productID: String, appleUnits: Int, appleReturns: Int, credited: Int, revoked: Int) {
        self.productID = productID
        self.appleUnits = appleUnits
        self.appleReturns = appleReturns
        self.credited = credited
        self.revoked = revoked
    }

    /// Apple's units minus ours. Negative: we credited units Apple never sold.
    public var gap: Int { appleUnits - credited }
    /// Apple's returned units minus our revocations: a refund we did not revoke (positive), or a
    /// revocation Apple shows no return for (negative).
    public var returnsGap: Int { appleReturns - revoked }
    /// The product-day reconciles: units and returns both agree.
    public var matches: Bool { gap == 0 && returnsGap == 0 }
}

/// What `reconcile --date D` found; `available: false` when Apple has not published the day yet.
public struct ReconciliationResult: Sendable, Equatable {
    public var day: ReportDay
    public var available: Bool
    /// Apple had no report for a day past its publication time: no sales that day (compared as zero units).
    public var noSales = false
    public var products: [ReconciledProduct]
    /// Gap alerts raised (new) and resolved by this run.
    public var alertsRaised = 0
    public var alertsResolved = 0
    /// Per product with a shortfall: the buyers whose histories were pulled and the jobs enqueued.
    public var recovered: [String: GapRecovery.Counts] = [:]
    /// Undelivered notifications of the day pulled from Get Notification History and enqueued (nil: not pulled).
    public var notificationsEnqueued: Int?

    /// Product-days that do not reconcile: units or returns differ.
    public var gaps: [ReconciledProduct] { products.filter { !$0.matches } }

    /// Exactly the shape `reconcile --json` promises: `{"day", "available", "products": [{"product_id", "apple_units",
    /// "apple_returns", "credited", "revoked", "gap"}]}`.
    public var json: String {
        var w = JSONWriter()
        w.beginObject()
        w.key("day"); w.string(day.description)
        w.key("available"); w.bool(available)
        w.key("products"); w.beginArray()
        for p in products {
            w.beginObject()
            w.key("product_id"); w.string(p.productID)
            for (name, value) in [("apple_units", p.appleUnits), ("apple_returns", p.appleReturns), ("credited", p.credited),
                                  ("revoked", p.revoked), ("gap", p.gap)] {
                w.key(name); w.integer(Int64(value))
            }
            w.endObject()
        }
        w.endArray()
        w.endObject()
        return String(decoding: w.bytes, as: UTF8.self)
    }
}

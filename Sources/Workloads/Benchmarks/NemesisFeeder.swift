import AppStore
import AppleSim
import Foundation
import Postgres
import Synchronization

/// What the feeder sent, kept so it can be sent again: after a failover that lost commits,
/// the web tier's own acknowledged writes may be gone too, and an app whose upload vanished
/// uploads it again (Apple, a notification it got no answer for).
final class NemesisFeedLog: Sendable {
    struct Batch: Sendable {
        let at: Date
        var indexes: [Int] = []
        var receipts: [String] = []
        /// Signed REFUND notifications, and the receipts they refund.
        var notifications: [String] = []
        var refunds: [Int] = []
    }

    private let batches = Mutex<[Batch]>([])
    private let resent = Mutex(0)

    fileprivate func record(_ batch: Batch) { batches.withLock { $0.append(batch) } }

    /// Batches whose sending started at `instant` or later.
    func batches(since instant: Date) -> [Batch] { batches.withLock { $0.filter { $0.at >= instant } } }

    fileprivate func countResent(_ count: Int) { resent.withLock { $0 += count } }
    var resentBatches: Int { resent.withLock { $0 } }
}

/// The web tier during the nemesis: every 100 ms the receipts due by then (a steady rate),
/// each an open order plus its paid receipt, in one transaction. One receipt in
/// `lostOrderEvery` comes from a buyer with no order (the order id lost on the device): Apple
/// says paid, nothing can be credited, and a `paid_not_credited` alert is owed. One in
/// `refundEvery` is refunded once credited: Apple's signed REFUND notification is enqueued, and
/// the credit must be revoked, and announced, once. A batch that fails is sent again byte for
/// byte (the enqueue's dedup makes that safe) until it commits: each receipt is minted and each
/// notification signed once, so a batch whose COMMIT reply was lost cannot make a second job.
struct NemesisFeeder: Sendable {
    static let bundleID = "com.example.nemesis"
    static let appAppleID: Int64 = 4242
    static let lostOrderEvery = 50
    static let refundEvery = 40

    let database: NemesisDatabase
    let rate: Double
    /// Signs the REFUND notifications (apple-sim's chain, which the workers trust); nil: no refunds.
    let signer: SimSigningChain?
    let log = NemesisFeedLog()

    init(database: NemesisDatabase, rate: Double, signer: SimSigningChain? = nil) {
        self.database = database
        self.rate = rate
        self.signer = signer
    }

    struct Feed: Sendable {
        /// Transaction ids whose receipts were enqueued with their order: each must be credited once.
        var ordered: [String] = []
        /// Transaction ids enqueued without an order: each must raise one `paid_not_credited` alert.
        var lostOrder: [String] = []
        /// Credited transaction ids whose REFUND was enqueued: each must be revoked once.
        var refunded: [String] = []
        var failedBatches = 0
        var startedAt = Date()
    }

    /// Receipt N: order `nx-oN` of user `nx-uN`, or user `nx-lN` with no order; transaction `nx-tN`.
    static func transactionID(_ index: Int) -> String { "nx-t\(index)" }
    static func isLostOrder(_ index: Int) -> Bool { index % lostOrderEvery == lostOrderEvery - 1 }
    static func isRefunded(_ index: Int) -> Bool { !isLostOrder(index) && index % refundEvery == 7 }

    func run(until end: ContinuousClock.Instant) async -> Feed {
        var feed = Feed()
        let started = ContinuousClock.now
        let purchasedAtMs = SimReceipt.nowMilliseconds()
        var next = 0
        var toRefund: [Int] = []
        while ContinuousClock.now < end {
            let due = Int(rate * (ContinuousClock.now - started).seconds)
            if due > next {
                var batch = NemesisFeedLog.Batch(at: Date(), indexes: Array(next..<due))
                batch.receipts = batch.indexes.map { Self.receipt($0, purchasedAtMs: purchasedAtMs) }
                feed.failedBatches += await send(batch)
                log.record(batch)
                for index in batch.indexes {
                    if Self.isLostOrder(index) { feed.lostOrder.append(Self.transactionID(index)) } else { feed.ordered.append(Self.transactionID(index)) }
                    if signer != nil, Self.isRefunded(index) { toRefund.append(index) }
                }
                next = due
            }
            if !toRefund.isEmpty, let credited = try? await credited(toRefund) {
                var batch = NemesisFeedLog.Batch(at: Date())
                for index in toRefund where credited.contains(Self.transactionID(index)) {
                    if let refund = try? refund(index, purchasedAtMs: purchasedAtMs) {
                        batch.notifications.append(refund)
                        batch.refunds.append(index)
                    }
                }
                if !batch.notifications.isEmpty {
                    feed.failedBatches += await send(batch)
                    log.record(batch)
                    feed.refunded += batch.refunds.map(Self.transactionID)
                    toRefund.removeAll { batch.refunds.contains($0) }
                }
            }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return feed
    }

    /// Sends again, byte for byte, every batch sent since `instant` (each until it commits). A
    /// REFUND may so reach the new primary before the credit it takes back is made again there:
    /// the worker keeps it and revokes the credit when it lands.
    func resend(since instant: Date) async {
        let batches = log.batches(since: instant)
        for batch in batches { _ = await send(batch) }
        log.countResent(batches.count)
    }

    /// Until it commits; returns how many tries failed.
    private func send(_ batch: NemesisFeedLog.Batch) async -> Int {
        var failed = 0
        while !Task.isCancelled {
            do {
                try await enqueue(batch)
                return failed
            } catch {
                failed += 1
                try? await Task.sleep(for: .milliseconds(200))
            }
        }
        return failed
    }

    /// Receipt `index`, the same bytes every time it is minted.
    static func receipt(_ index: Int, purchasedAtMs: Int64) -> String {
        SimReceipt(bundleID: bundleID, transactions: [.init(transactionID: transactionID(index), productID: "coins_100",
                                                            purchaseDateMs: purchasedAtMs + Int64(index))]).mint()
    }

    /// Apple's REFUND notification for receipt `index`, signed once.
    private func refund(_ index: Int, purchasedAtMs: Int64) throws -> String? {
        guard let signer else { return nil }
        let id = Self.transactionID(index)
        let transaction = JWSTransactionPayload(
            transactionId: id, originalTransactionId: id, bundleId: Self.bundleID, productId: "coins_100", quantity: 1,
            purchaseDate: Date(timeIntervalSince1970: Double(purchasedAtMs + Int64(index)) / 1000), signedDate: Date(),
            revocationDate: Date(), revocationReason: "1", environment: "Production")
        return try signer.signNotification(type: "REFUND", transaction: transaction, bundleID: Self.bundleID,
                                           appAppleID: Self.appAppleID, environment: .production)
    }

    /// Which of the receipts `indexes` are in the ledger.
    private func credited(_ indexes: [Int]) async throws -> Set<String> {
        Set(try await database.client.query("SELECT transaction_id FROM iap.credits WHERE transaction_id = ANY($1)",
                                            [indexes.map(Self.transactionID)]).map { try $0.decode(String.self, at: 0) })
    }

    private func enqueue(_ batch: NemesisFeedLog.Batch) async throws {
        let ordered = batch.indexes.filter { !Self.isLostOrder($0) }
        let users = batch.indexes.map { Self.isLostOrder($0) ? "nx-l\($0)" : "nx-u\($0)" }
        let orders = batch.indexes.map { Self.isLostOrder($0) ? "" : "nx-o\($0)" }
        _ = try await database.client.transaction { connection in
            _ = try await connection.query("""
                INSERT INTO iap.orders (order_id, user_id, product_id)
                SELECT o, u, 'coins_100' FROM unnest($1::text[], $2::text[]) AS x(o, u)
                ON CONFLICT (order_id) DO NOTHING
                """, [ordered.map { "nx-o\($0)" }, ordered.map { "nx-u\($0)" }])
            // An empty order id is enqueued as none (the function's nullif).
            _ = try await connection.query("""
                SELECT count(iap.enqueue_receipt(u, o, r)) FROM unnest($1::text[], $2::text[], $3::text[]) AS x(u, o, r)
                """, [users, orders, batch.receipts])
            return try await connection.query("SELECT count(iap.enqueue_notification(p)) FROM unnest($1::text[]) AS p",
                                              [batch.notifications]).count
        }
    }
}

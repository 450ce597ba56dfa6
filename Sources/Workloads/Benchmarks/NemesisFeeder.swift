import AppleSim
import Foundation
import Postgres
import Synchronization

/// What the feeder sent, kept so it can be sent again: after a failover that lost commits,
/// the web tier's own acknowledged writes may be gone too, and an app whose upload vanished
/// uploads it again.
final class NemesisFeedLog: Sendable {
    struct Batch: Sendable {
        let at: Date
        let indexes: [Int]
        let receipts: [String]
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
/// says paid, nothing can be credited, and a `paid_not_credited` alert is owed. A batch that
/// fails is sent again byte for byte (the enqueue's dedup makes that safe) until it commits:
/// each receipt is minted once, so a batch whose COMMIT reply was lost cannot make a second job.
struct NemesisFeeder: Sendable {
    static let bundleID = "com.example.nemesis"
    static let lostOrderEvery = 50

    let database: NemesisDatabase
    let rate: Double
    let log = NemesisFeedLog()

    struct Feed: Sendable {
        /// Transaction ids whose receipts were enqueued with their order: each must be credited once.
        var ordered: [String] = []
        /// Transaction ids enqueued without an order: each must raise one `paid_not_credited` alert.
        var lostOrder: [String] = []
        var failedBatches = 0
        var startedAt = Date()
    }

    /// Receipt N: order `nx-oN` of user `nx-uN`, or user `nx-lN` with no order; transaction `nx-tN`.
    static func transactionID(_ index: Int) -> String { "nx-t\(index)" }
    static func isLostOrder(_ index: Int) -> Bool { index % lostOrderEvery == lostOrderEvery - 1 }

    func run(until end: ContinuousClock.Instant) async -> Feed {
        var feed = Feed()
        let started = ContinuousClock.now
        let purchasedAtMs = SimReceipt.nowMilliseconds()
        var next = 0
        while ContinuousClock.now < end {
            let due = Int(rate * (ContinuousClock.now - started).seconds)
            if due > next {
                let batch = Array(next..<due)
                let receipts = batch.map { Self.receipt($0, purchasedAtMs: purchasedAtMs) }
                let startedSending = Date()
                feed.failedBatches += await send(batch, receipts: receipts)
                log.record(NemesisFeedLog.Batch(at: startedSending, indexes: batch, receipts: receipts))
                for index in batch {
                    if Self.isLostOrder(index) { feed.lostOrder.append(Self.transactionID(index)) } else { feed.ordered.append(Self.transactionID(index)) }
                }
                next = due
            }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return feed
    }

    /// Sends again, byte for byte, every batch sent since `instant` (each until it commits).
    func resend(since instant: Date) async {
        let batches = log.batches(since: instant)
        for batch in batches { _ = await send(batch.indexes, receipts: batch.receipts) }
        log.countResent(batches.count)
    }

    /// Until it commits; returns how many tries failed.
    private func send(_ batch: [Int], receipts: [String]) async -> Int {
        var failed = 0
        while !Task.isCancelled {
            do {
                try await enqueue(batch, receipts: receipts)
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

    private func enqueue(_ batch: [Int], receipts: [String]) async throws {
        let ordered = batch.filter { !Self.isLostOrder($0) }
        let users = batch.map { Self.isLostOrder($0) ? "nx-l\($0)" : "nx-u\($0)" }
        let orders = batch.map { Self.isLostOrder($0) ? "" : "nx-o\($0)" }
        _ = try await database.client.transaction { connection in
            _ = try await connection.query("""
                INSERT INTO iap.orders (order_id, user_id, product_id)
                SELECT o, u, 'coins_100' FROM unnest($1::text[], $2::text[]) AS x(o, u)
                ON CONFLICT (order_id) DO NOTHING
                """, [ordered.map { "nx-o\($0)" }, ordered.map { "nx-u\($0)" }])
            // An empty order id is enqueued as none (the function's nullif).
            return try await connection.query("""
                SELECT count(iap.enqueue_receipt(u, o, r)) FROM unnest($1::text[], $2::text[], $3::text[]) AS x(u, o, r)
                """, [users, orders, receipts]).count
        }
    }
}

import AppStore
import Foundation
import Observability
import Postgres
import Queue
import Settlement
import StoreKitCrypto

/// For a product-day where Apple sold more than we credited, pulls the nameable buyers'
/// Get Transaction History (v2) and enqueues every paid production transaction the ledger lacks.
/// Nothing is credited here: each goes through the `transaction_id` job, Get Transaction Info and
/// the ledger's primary key, so a transaction enqueued twice is still credited once.
public struct GapRecovery: Sendable {
    public struct Counts: Sendable, Equatable {
        public var buyers = 0
        /// Buyers with no transaction id we know of (History needs one).
        public var unreachable = 0
        public var historyFailures = 0
        public var enqueued = 0
    }

    let client: PostgresClient
    let api: AppStoreServerAPIClient
    let logger: Logger
    /// Buyers looked up per product-day and run: bounds how long the leader's duty holds the others up
    /// (History calls wait for the fleet limit); the next run draws others.
    let maxBuyers: Int
    private let buyers = GapBuyers()
    /// Pages of one customer's history read at most (a page holds up to 20 transactions).
    static let maxPages = 50

    /// Reads the gap day's undelivered notifications; nil leaves them to the leader's periodic pull.
    let notifications: NotificationHistoryPuller?

    public init(client: PostgresClient, api: AppStoreServerAPIClient, logger: Logger, maxBuyers: Int = .max,
                notifications: NotificationHistoryPuller? = nil) {
        self.client = client
        self.api = api
        self.logger = logger
        self.maxBuyers = max(1, maxBuyers)
        self.notifications = notifications
    }

    /// Get Notification History (failures only) for the Pacific `day` and the hour after it (a purchase's
    /// notification follows it): each undelivered notification is enqueued as `POST /v1/notifications` would,
    /// reaching buyers no open order or alert names. Returns the new jobs; nil when not configured or Apple failed.
    public func pullNotifications(of day: ReportDay, now: Date = Date()) async -> Int? {
        guard let notifications else { return nil }
        let span = DateInterval(start: day.start, end: max(day.start, min(day.end.addingTimeInterval(3600), now)))
        do {
            return try await notifications.backfill(span).enqueued
        } catch {
            logger.warning("reconciliation_notification_history_failed", ["day": .string(day.description), "reason": .string("\(error)")])
            return nil
        }
    }

    /// Under a leader's `term`, each enqueue carries it: one made after the term ended in the
    /// database (another process leads now) enqueues nothing and throws `LeaseEnded`.
    public func recover(product: String, day: ReportDay, term: LeaderTerm? = nil) async throws -> Counts {
        let found = try await buyers.find(product: product, day: day, limit: min(maxBuyers, Int(Int32.max)), client: client)
        var counts = Counts(buyers: found.buyers.count, unreachable: found.unreachable)
        for buyer in found.buyers {
            switch await paidTransactions(of: buyer) {
            case .failure(let error):
                counts.historyFailures += 1
                logger.warning("reconciliation_history_failed", ["user_id": .string(buyer.userID), "reason": .string(error.reason)])
            case .success(let ids):
                counts.enqueued += try await buyers.enqueueMissing(userID: buyer.userID, transactionIDs: ids, client: client, term: term)
            }
        }
        logger.info("reconciliation_buyers_pulled", ["product_id": .string(product), "day": .string(day.description),
                                                     "buyers": .int(counts.buyers), "unreachable": .int(counts.unreachable),
                                                     "enqueued": .int(counts.enqueued)])
        return counts
    }

    /// The customer's paid (not revoked) production transactions, every page. Only read to choose what
    /// to enqueue: the job verifies each transaction with Apple before anything is credited.
    private func paidTransactions(of buyer: GapBuyers.Buyer) async -> Result<[String], AppStoreAPIError> {
        var ids: [String] = []
        var revision: String?
        for _ in 0..<Self.maxPages {
            switch await api.getTransactionHistory(transactionID: buyer.knownTransactionID, revision: revision) {
            case .failure(let error): return .failure(error)
            case .success(let page):
                for signed in page.signedTransactions {
                    guard let jws = try? JWSCompact.parse(signed),
                          let payload = try? JSONDecoder().decode(JWSTransactionPayload.self, from: Data(jws.payload)),
                          let id = payload.transactionId, payload.revocationDate == nil,
                          payload.environment == nil || payload.environment == "Production" else { continue }
                    ids.append(id)
                }
                guard page.hasMore, let next = page.revision else { return .success(ids) }
                revision = next
            }
        }
        return .success(ids)
    }
}

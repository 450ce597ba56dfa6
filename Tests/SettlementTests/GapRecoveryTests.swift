import AppStore
import AppleSim
import Foundation
import HTTP
import Observability
import Postgres
import Queue
@testable import Reconciliation
@testable import Settlement
import TestSupport
import XCTest

/// Reconciliation's proof: 1,000 purchases paid at apple-sim, 963 uploaded and credited by the real
/// worker, 37 never uploaded nor notified. Reconciliation finds the shortfall, pulls the buyers' Get Transaction
/// History, enqueues what the ledger lacks; the worker credits each exactly once and the day reconciles.
final class GapRecoveryTests: XCTestCase {
    func testTheMissingPurchasesAreFoundThroughTheBuyersHistoriesAndCreditedOnce() async throws {
        let f = try await SettlementFixture(serverAPI: true)
        let api = try XCTUnwrap(f.api)
        let sim = f.simulator.serverAPI
        let transport = try SocketHTTPTransport()
        let reports = try SalesReportClient.against(f.simulator, transport: transport)
        let logger = Logger(minimumLevel: .debug, sink: f.logs)
        let reconciler = Reconciler(client: f.client, reports: reports,
                                    alerts: AlertRecorder(logger: logger, metrics: f.metrics, webhook: nil), logger: logger,
                                    recovery: GapRecovery(client: f.client, api: api, logger: logger))
        let day = ReportDay(containing: Date().addingTimeInterval(-86_400))
        let noon = day.start.addingTimeInterval(12 * 3600), earlier = day.start.addingTimeInterval(-86_400)
        let (buyers, silent) = (1000, 37)

        // Every buyer ordered coins_100 that day; the last `silent` ones had bought before (so one of
        // their transactions is known) and never uploaded this purchase.
        func purchase(_ id: String, user: Int, at date: Date) async throws -> Int {
            sim.register(JWSTransactionPayload(transactionId: id, originalTransactionId: id, bundleId: SettlementFixture.bundleID,
                                               productId: "coins_100", purchaseDate: date, appAccountToken: Self.account(user).uuidString.lowercased(),
                                               environment: "Production"))
            return try await f.client.query("SELECT iap.enqueue_transaction_id($1, NULL, $2)", ["buyer-\(user)", id])[0].decode(Int.self, at: 0)
        }
        var jobs: [Int] = []
        for user in 0..<buyers {
            _ = try await f.client.query("INSERT INTO iap.orders (order_id, user_id, product_id, created_at) VALUES ($1, $2, 'coins_100', $3)",
                                         ["o-\(user)", "buyer-\(user)", noon])
            if user < buyers - silent {
                jobs.append(try await purchase("paid-\(user)", user: user, at: noon))
            } else {
                _ = try await f.client.query("INSERT INTO iap.orders (order_id, user_id, product_id, created_at) VALUES ($1, $2, 'coins_100', $3)",
                                             ["o-before-\(user)", "buyer-\(user)", earlier])
                jobs.append(try await purchase("before-\(user)", user: user, at: earlier))
                sim.injectUnuploadedSales(productID: "coins_100", count: 1, purchaseDate: noon, appAccountToken: Self.account(user).uuidString.lowercased(),
                                          bundleID: SettlementFixture.bundleID)
            }
        }
        for job in jobs {
            let outcome = try await f.finished(job).outcome
            XCTAssertEqual(outcome, "credited")
        }

        let found = try await reconciler.reconcile(day)
        XCTAssertEqual(found.products, [ReconciledProduct(productID: "coins_100", appleUnits: buyers, appleReturns: 0,
                                                          credited: buyers - silent, revoked: 0)])
        XCTAssertEqual(found.alertsRaised, 1)
        XCTAssertEqual(found.recovered["coins_100"], GapRecovery.Counts(buyers: silent, unreachable: 0, historyFailures: 0, enqueued: silent))

        let recovered = try await f.client.query("SELECT id FROM iap.jobs WHERE kind = 'transaction_id' AND payload LIKE 'sim-gap-%'")
            .map { try $0.decode(Int.self, at: 0) }
        XCTAssertEqual(recovered.count, silent)
        for job in recovered {
            let outcome = try await f.finished(job).outcome
            XCTAssertEqual(outcome, "credited")
        }

        let clean = try await reconciler.reconcile(day)
        XCTAssertEqual(clean.gaps, [])
        XCTAssertEqual(clean.alertsResolved, 1)
        XCTAssertEqual(clean.recovered, [:])
        let credits = try await f.client.query("SELECT count(*), count(DISTINCT transaction_id) FROM iap.credits")[0]
        XCTAssertEqual(try credits.decode(Int.self, at: 0), buyers + silent, "every purchase, and the earlier ones, once")
        XCTAssertEqual(try credits.decode(Int.self, at: 1), buyers + silent)
        let open = try await f.client.query("SELECT count(*) FROM iap.orders WHERE status = 'open'")[0].decode(Int.self, at: 0)
        XCTAssertEqual(open, 0)
        await transport.shutdown()
        await f.stop()
    }

    /// A buyer's missing purchase found under a leader's term that has ended in the database
    /// (another process leads now) is not enqueued; under no term (a one-off run) it is.
    func testAnEndedTermEnqueuesNothing() async throws {
        let f = try await SettlementFixture(serverAPI: true)
        let api = try XCTUnwrap(f.api)
        let sim = f.simulator.serverAPI
        let day = ReportDay(containing: Date().addingTimeInterval(-86_400))
        let noon = day.start.addingTimeInterval(12 * 3600), earlier = day.start.addingTimeInterval(-86_400)
        let token = Self.account(7).uuidString.lowercased()
        sim.register(JWSTransactionPayload(transactionId: "known-7", originalTransactionId: "known-7", bundleId: SettlementFixture.bundleID,
                                           productId: "coins_100", purchaseDate: earlier, appAccountToken: token, environment: "Production"))
        for (order, at) in [("o-before-7", earlier), ("o-7", noon)] {
            _ = try await f.client.query("INSERT INTO iap.orders (order_id, user_id, product_id, created_at) VALUES ($1, 'buyer-7', 'coins_100', $2)",
                                         [order, at])
        }
        let known = try await f.client.query("SELECT iap.enqueue_transaction_id('buyer-7', NULL, 'known-7')")[0].decode(Int.self, at: 0)
        let knownOutcome = try await f.finished(known).outcome
        XCTAssertEqual(knownOutcome, "credited")
        sim.injectUnuploadedSales(productID: "coins_100", count: 1, purchaseDate: noon, appAccountToken: token, bundleID: SettlementFixture.bundleID)
        let recovery = GapRecovery(client: f.client, api: api, logger: Logger(minimumLevel: .debug, sink: f.logs))
        func gapJobs() async throws -> Int {
            try await f.client.query("SELECT count(*) FROM iap.jobs WHERE kind = 'transaction_id' AND payload LIKE 'sim-gap-%'")[0].decode(Int.self, at: 0)
        }

        do {
            _ = try await recovery.recover(product: "coins_100", day: day, term: try await TakenOverTerm.make(f.client))
            XCTFail("a recovery enqueued under an ended term")
        } catch {
            XCTAssertTrue(error is LeaseEnded, "\(error)")
        }
        let fenced = try await gapJobs()
        XCTAssertEqual(fenced, 0)

        let counts = try await recovery.recover(product: "coins_100", day: day)
        XCTAssertEqual(counts, GapRecovery.Counts(buyers: 1, unreachable: 0, historyFailures: 0, enqueued: 1))
        let enqueued = try await gapJobs()
        XCTAssertEqual(enqueued, 1)
        await f.stop()
    }

    /// One apple-sim customer per buyer (apple-sim's History finds a customer by appAccountToken).
    static func account(_ user: Int) -> UUID {
        UUID(uuidString: String(format: "00000000-0000-4000-8000-%012d", user))!
    }
}

import AppStore
import AppleSim
import Foundation
import Observability
import Postgres
import Queue
import Settlement
import TestSupport
import XCTest

/// The history pull against apple-sim over HTTP and a real database: notifications Apple failed to deliver,
/// pulled page by page and enqueued once.
final class NotificationHistoryTests: XCTestCase {
    /// 45 failed notifications (3 pages of 20), one of them also delivered normally, plus delivered ones that must not come back.
    private func seed(_ f: SettlementFixture, paidUUID: String, token: UUID) async throws -> (paidCopy: String, failed: Int) {
        let chain = f.simulator.serverAPI.signingChain
        let sentAt = Date().addingTimeInterval(-3600)
        for i in 0..<44 {
            let payload = try chain.signNotification(type: "TEST", uuid: UUID().uuidString, transaction: nil, bundleID: SettlementFixture.bundleID,
                                                     appAppleID: 4242, environment: .production)
            f.simulator.serverAPI.recordNotification(payload, sentAt: sentAt.addingTimeInterval(Double(i)), delivered: false)
        }
        for _ in 0..<5 {
            let payload = try chain.signNotification(type: "TEST", transaction: nil, bundleID: SettlementFixture.bundleID, appAppleID: 4242,
                                                     environment: .production)
            f.simulator.serverAPI.recordNotification(payload, sentAt: sentAt, delivered: true)
        }
        // A charge Apple retried: it reached us once (re-signed later), and history also lists it as a failure.
        let transaction = JWSTransactionPayload(transactionId: "h-t1", originalTransactionId: "h-t1", bundleId: SettlementFixture.bundleID,
                                                productId: "coins_100", purchaseDate: Date(), appAccountToken: token.uuidString,
                                                environment: "Production")
        let failedCopy = try chain.signNotification(type: "ONE_TIME_CHARGE", uuid: paidUUID, transaction: transaction,
                                                    bundleID: SettlementFixture.bundleID, appAppleID: 4242, environment: .production,
                                                    signedDate: sentAt)
        f.simulator.serverAPI.recordNotification(failedCopy, sentAt: sentAt.addingTimeInterval(100), delivered: false)
        let deliveredCopy = try chain.signNotification(type: "ONE_TIME_CHARGE", uuid: paidUUID, transaction: transaction,
                                                       bundleID: SettlementFixture.bundleID, appAppleID: 4242, environment: .production)
        return (deliveredCopy, 45)
    }

    private func puller(_ f: SettlementFixture) throws -> NotificationHistoryPuller {
        NotificationHistoryPuller(client: f.client, api: try XCTUnwrap(f.api), metrics: f.metrics, logger: Logger(sink: CapturingLogSink()))
    }

    private func notificationJobs(_ f: SettlementFixture) async throws -> Int {
        try await f.client.query("SELECT count(*) FROM iap.jobs WHERE kind = 'notification'")[0].decode(Int.self, at: 0)
    }

    private func allFinished(_ f: SettlementFixture) async throws -> Bool {
        try await f.client.query("SELECT count(*) FROM iap.jobs WHERE state NOT IN ('done', 'failed', 'attention')")[0].decode(Int.self, at: 0) == 0
    }

    func testPagesWithFailuresAreEnqueuedOnceAndTheCursorResumesAndAdvances() async throws {
        let f = try await SettlementFixture(serverAPI: true)
        let token = UUID()
        try await f.order("h-1", user: "hana", product: "coins_100", token: token)
        let (deliveredCopy, failed) = try await seed(f, paidUUID: UUID().uuidString, token: token)
        // The normal delivery arrived first and credited the order.
        let delivered = try await f.client.query("SELECT iap.enqueue_notification($1)", [deliveredCopy])[0].decode(Int.self, at: 0)
        let credited = try await f.finished(delivered)
        XCTAssertEqual(credited.outcome, "credited")

        // One page, then the process "restarts": a new puller resumes from the cursor in the database.
        let first = try await puller(f).pullIfDue(interval: 3600, budget: .seconds(30), maxPages: 1)
        XCTAssertEqual(first?.pages, 1)
        XCTAssertEqual(first?.complete, false)
        let resumed = try await puller(f).pullIfDue(interval: 3600, budget: .seconds(30))
        let rest = try XCTUnwrap(resumed)
        XCTAssertEqual(rest.pages, 2)
        XCTAssertTrue(rest.complete)
        XCTAssertEqual(first!.notifications + rest.notifications, failed)
        XCTAssertEqual(f.simulator.serverAPI.apiRequestsTotal, 3, "no page was asked for twice")
        let jobs = try await notificationJobs(f)
        XCTAssertEqual(jobs, failed + 1, "every failed notification enqueued once, beside the delivered one")
        let finished = try await eventually { try await self.allFinished(f) }
        XCTAssertTrue(finished)
        let ledger = try await f.ledger()
        XCTAssertEqual(ledger, ["h-t1": "h-1"], "the charge delivered twice is applied once")
        let acknowledged = try await f.client.query("""
            SELECT count(*) FROM iap.jobs WHERE kind = 'notification' AND outcome = 'acknowledged' AND last_error LIKE '%already applied%'
            """)[0].decode(Int.self, at: 0)
        XCTAssertEqual(acknowledged, 1)

        // The cursor moved to the pull's end; not due again within the interval; the next pull overlaps 10 minutes.
        let pulledUntil = try await f.client.query("SELECT pulled_until FROM iap.notification_history_cursor")[0].decode(Date.self, at: 0)
        XCTAssertEqual(pulledUntil.timeIntervalSince1970, rest.span.end.timeIntervalSince1970, accuracy: 0.001)
        let notDue = try await puller(f).pullIfDue(interval: 3600, budget: .seconds(30))
        XCTAssertNil(notDue)
        let again = try await puller(f).pullIfDue(interval: 0, budget: .seconds(30))
        let next = try XCTUnwrap(again)
        XCTAssertEqual(next.span.start.timeIntervalSince1970, pulledUntil.timeIntervalSince1970 - 600, accuracy: 0.001)
        XCTAssertEqual(next.enqueued, 0, "the overlap finds nothing new")
        await f.stop()
    }

    /// A pull under a leader's term asks Apple nothing more once the lease has ended
    /// (here while it waits out a 429 after the first page), and the cursor stays at the last
    /// page saved, for the next leader.
    func testPullStopsWhenTheLeaseEnds() async throws {
        let f = try await SettlementFixture(serverAPI: true)
        _ = try await seed(f, paidUUID: UUID().uuidString, token: UUID())
        f.simulator.serverAPI.inject(SimAPIFault(status: 429, retryAfter: "2", skip: 1, count: 1, family: .notificationHistory))
        let term = LeaderTerm.held(until: .now + .seconds(1))
        do {
            _ = try await puller(f).pullIfDue(interval: 3600, budget: .seconds(30), term: term)
            XCTFail("the pull went on past its lease")
        } catch {
            XCTAssertTrue(error is LeaseEnded, "\(error)")
        }
        XCTAssertEqual(f.simulator.serverAPI.apiRequestsTotal, 2, "page 1, then the 429; nothing after the lease ended")
        let jobs = try await notificationJobs(f)
        XCTAssertEqual(jobs, 20, "page 1 only")
        let cursor = try await f.client.query("SELECT pull_start IS NOT NULL, pages FROM iap.notification_history_cursor")[0]
        XCTAssertEqual(try cursor.decode(Bool.self, at: 0), true, "the pull in progress stays for the next leader")
        XCTAssertEqual(try cursor.decode(Int.self, at: 1), 1)
        let resumed = try await puller(f).pullIfDue(interval: 3600, budget: .seconds(30), term: LeaderTerm.held(until: .now + .seconds(60)))
        XCTAssertEqual(resumed?.complete, true)
        XCTAssertEqual(resumed?.pages, 2)
        await f.stop()
    }

    /// A page read under a term that ended in the database (another process leads now) is not
    /// saved: no job enqueued, the cursor not moved.
    func testAPageOfAnEndedTermIsNotSaved() async throws {
        let f = try await SettlementFixture(serverAPI: true)
        _ = try await seed(f, paidUUID: UUID().uuidString, token: UUID())
        let term = try await TakenOverTerm.make(f.client)
        do {
            _ = try await puller(f).pullIfDue(interval: 3600, budget: .seconds(30), term: term)
            XCTFail("a page was saved under an ended term")
        } catch {
            XCTAssertTrue(error is LeaseEnded, "\(error)")
        }
        let jobs = try await notificationJobs(f)
        XCTAssertEqual(jobs, 0)
        let pages = try await f.client.query("SELECT pages FROM iap.notification_history_cursor")[0].decode(Int.self, at: 0)
        XCTAssertEqual(pages, 0)
        await f.stop()
    }

    func testA429MidPaginationResumesFromTheSamePage() async throws {
        let f = try await SettlementFixture(serverAPI: true)
        let token = UUID()
        try await f.order("h-2", user: "hugo", product: "coins_100", token: token)
        _ = try await seed(f, paidUUID: UUID().uuidString, token: token)
        f.simulator.serverAPI.inject(SimAPIFault(status: 429, retryAfter: "1", skip: 1, count: 1, family: .notificationHistory))
        let counts = try await puller(f).backfill(since: 72 * 3600)
        XCTAssertTrue(counts.complete)
        XCTAssertEqual(counts.pages, 3)
        XCTAssertEqual(counts.enqueued, 45)
        XCTAssertEqual(f.simulator.serverAPI.apiRequestsTotal, 4, "page 2 asked again after the 429, nothing else twice")
        let jobs = try await notificationJobs(f)
        XCTAssertEqual(jobs, 45)
        // The pause was written for the whole fleet.
        let throttled = try await f.client.query("""
            SELECT throttled_at IS NOT NULL FROM iap.appstore_api_limits WHERE family = 'notification_history'
            """)[0].decode(Bool.self, at: 0)
        XCTAssertTrue(throttled)
        await f.stop()
    }

    /// Apple keeps 30 days of sandbox history (180 in production) and refuses an older start
    /// (4000012): a sandbox backfill of 72 days asks for the 29 it can have.
    func testASandboxBackfillStaysInsideTheThirtyDaysAppleKeeps() async throws {
        let f = try await SettlementFixture(serverAPI: true)
        let sandbox = NotificationHistoryPuller(client: f.client, api: try XCTUnwrap(f.api), metrics: f.metrics,
                                                logger: Logger(sink: CapturingLogSink()), environment: .sandbox)
        let counts = try await sandbox.backfill(since: 72 * 86_400)
        XCTAssertTrue(counts.complete)
        XCTAssertGreaterThan(counts.span.start, Date().addingTimeInterval(-30 * 86_400))
        await f.stop()
    }
}

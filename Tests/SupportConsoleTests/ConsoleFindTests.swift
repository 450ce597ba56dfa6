import Foundation
import HTTP
import Postgres
import SupportConsole
import TestSupport
import XCTest

/// The header's one "find" box, and buyers credited by a job that does not name them
/// (a notification, a late order match, a lookup).
final class ConsoleFindTests: XCTestCase {
    /// A buyer credited through a notification: the job has no user or order, only the ledger names them.
    static func creditThroughANotification(_ harness: ConsoleHarness) async throws -> Int {
        let job = try await harness.client.query("SELECT iap.enqueue_notification($1)", ["signed-notification-dana"])[0].decode(Int.self, at: 0)
        _ = try await harness.client.query("""
            UPDATE iap.jobs SET state = 'done', outcome = 'credited', transaction_ids = ARRAY['2000000000000009'], finished_at = now() WHERE id = $1
            """, [job])
        _ = try await harness.client.query("""
            INSERT INTO iap.orders (order_id, user_id, product_id, status, transaction_id) VALUES ('order-dana-1', 'dana', 'coins_100', 'credited', '2000000000000009');
            """)
        _ = try await harness.client.query("""
            INSERT INTO iap.credits (transaction_id, original_transaction_id, order_id, user_id, product_id, quantity, environment, job_id)
            VALUES ('2000000000000009', '1000000000000009', 'order-dana-1', 'dana', 'coins_100', 1, 'Production', $1)
            """, [job])
        return job
    }

    func testTheFindBoxJumpsToASingleMatchAndOffersTheUserPageWhenNothingMatches() async throws {
        let harness = try await ConsoleHarness(lookup: FakeOrderLookup())
        let session = try ConsoleSession(baseURL: harness.baseURL)
        _ = try await session.signIn("sam", password: ConsoleHarness.password)
        let job = try await Self.creditThroughANotification(harness)
        let overview = try await session.get("/")
        XCTAssertTrue(overview.text.contains("action=\"/find\""), "every page's header carries the find box")
        let expected: [(String, String)] = [
            // A transaction opens its buyer's story, where the alert's actions are, not a job page without them.
            ("dana", "/users?id=dana"), ("order-dana-1", "/users?id=dana"), ("2000000000000009", "/users?id=dana"),
            ("1000000000000009", "/users?id=dana"), ("%23\(job)", "/jobs/\(job)"), ("\(harness.fixture.creditedJob)", "/jobs/\(harness.fixture.creditedJob)"),
            ("2000000000000001", "/users?id=alice"), ("order-alice-1", "/users?id=alice"),
            // Whatever the case: a user id as the buyer wrote it, an Apple order id as typed from an e-mail.
            ("Dana", "/users?id=dana"), ("ALICE", "/users?id=alice"),
        ]
        for (text, location) in expected {
            let found = try await session.get("/find?q=\(text)")
            XCTAssertEqual(found.status, 303, text)
            XCTAssertEqual(found.header("Location"), location, text)
        }
        let nothing = try await session.get("/find?q=MK5TTTVWJH")
        XCTAssertEqual(nothing.status, 404)
        XCTAssertTrue(nothing.text.contains("href=\"/users?id=MK5TTTVWJH\""), nothing.text)
        XCTAssertTrue(nothing.text.contains("href=\"/lookup?apple_order_id=MK5TTTVWJH\""), "support is offered the Apple order lookup")
        XCTAssertTrue(harness.registry.render().contains("iap_console_requests_total{page=\"find\",status=\"404\"}"), "a page label of its own")
        let looked = try await session.post("/lookup", [("csrf", try await session.csrfToken()), ("apple_order_id", "mk5tttvwjh")])
        XCTAssertEqual(looked.status, 303)
        let stored: String = try await harness.scalar("SELECT apple_order_id FROM iap.apple_order_lookups")
        XCTAssertEqual(stored, "MK5TTTVWJH", "kept as Apple writes it")
        for typed in ["mk5tttvwjh", "MK5TTTVWJH"] {
            let found = try await session.get("/find?q=\(typed)")
            XCTAssertEqual(found.header("Location"), "/lookup?apple_order_id=MK5TTTVWJH", typed)
        }
        let lookup = try await session.get("/lookup?apple_order_id=MK5TTTVWJH")
        XCTAssertTrue(lookup.text.contains("value=\"MK5TTTVWJH\""), "the handed-over id is kept in the box")
        await session.close()
        await harness.close()
    }

    func testJobsSearchAndTheUserPageFindABuyerCreditedByANotification() async throws {
        let harness = try await ConsoleHarness()
        let session = try ConsoleSession(baseURL: harness.baseURL)
        _ = try await session.signIn("vera", password: ConsoleHarness.password)
        let job = try await Self.creditThroughANotification(harness)
        for text in ["dana", "order-dana-1", "2000000000000009", "1000000000000009"] {
            let search = try await session.get("/jobs?q=\(text)")
            XCTAssertTrue(search.text.contains("href=\"/jobs/\(job)\""), "/jobs?q=\(text) finds the notification job")
        }
        let userPage = try await session.get("/users?id=dana")
        XCTAssertTrue(userPage.text.contains("href=\"/jobs/\(job)\""), "the user page lists the job that credited them")
        XCTAssertFalse(userPage.text.contains("No jobs"))
        await session.close()
        await harness.close()
    }

    func testTheUserPageSaysWhenOlderJobsFollowAndPagesToThem() async throws {
        let harness = try await ConsoleHarness()
        let session = try ConsoleSession(baseURL: harness.baseURL)
        _ = try await session.signIn("vera", password: ConsoleHarness.password)
        _ = try await harness.client.query("""
            INSERT INTO iap.jobs (kind, user_id, payload, dedup_key) SELECT 'receipt', 'erin', 'p' || i, sha256(('erin' || i)::bytea)
            FROM generate_series(1, 105) AS i
            """)
        let first = try await session.get("/users?id=erin")
        XCTAssertTrue(first.text.contains("Showing 100 jobs; older ones follow."), first.text)
        let next = try XCTUnwrap(first.text.range(of: "href=\"/users?id=erin&amp;jobs_before=").map { first.text[$0.lowerBound...].dropFirst(6).prefix { $0 != "\"" } })
        let second = try await session.get(String(next).replacingOccurrences(of: "&amp;", with: "&"))
        XCTAssertEqual(second.status, 200)
        XCTAssertEqual(second.text.components(separatedBy: "data-label=\"job\"").count - 1, 5)
        await session.close()
        await harness.close()
    }
}

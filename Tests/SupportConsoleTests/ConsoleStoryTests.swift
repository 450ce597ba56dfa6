import Foundation
import HTTP
import Observability
import SupportConsole
import TestSupport
import XCTest

/// The buyer's story and verdict, workers alive, the find box answering
/// an Apple order id, and form results shared through PostgreSQL.
final class ConsoleStoryTests: XCTestCase {
    func testTheUserPageTellsTheBuyersStoryInTimeOrderWithAVerdictToPaste() async throws {
        let harness = try await ConsoleHarness()
        let session = try ConsoleSession(baseURL: harness.baseURL)
        _ = try await session.signIn("sam", password: ConsoleHarness.password)
        let alert = harness.fixture.paidNotCreditedAlert, job = harness.fixture.attentionJob

        let before = try await session.get("/users?id=alice").text
        XCTAssertTrue(before.contains("<p class=\"verdict\" id=\"verdict\" title=\"Click once to select it all, then copy\">"
                                      + "Your payment (Apple transaction 2000000000000001, coins_100) reached us from Apple but is not credited yet.</p>"), before)
        XCTAssertTrue(before.contains("</span> Open alert #\(alert) (job #\(job)): credit it to an open order.</p>"), before)
        let story = try XCTUnwrap(before.range(of: "<ol class=\"timeline\">").map { String(before[$0.lowerBound...]) })
        let steps = ["Order order-alice-1 created for coins_100.", "Job #\(job) received (receipt).",
                     "Job #\(job) finished: attention / paid_not_credited, Apple status 0.", "Alert #\(alert) raised: paid_not_credited"]
        let positions = try steps.map { step in try XCTUnwrap(story.range(of: step), "story lacks \(step)").lowerBound }
        XCTAssertEqual(positions, positions.sorted(), "the story runs oldest first")

        let credited = try await session.post("/alerts/\(alert)/credit", [("csrf", try await session.csrfToken()), ("order_choice", "order-alice-1"),
                                                                          ("return_to", "/users?id=alice")])
        XCTAssertEqual(credited.status, 303)
        let after = try await session.get("/users?id=alice").text
        let at: String = try await harness.scalar("SELECT to_char(credited_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI') FROM iap.credits WHERE user_id = 'alice'")
        XCTAssertTrue(after.contains(">Credited coins_100 to order order-alice-1 at \(at) UTC (Apple transaction 2000000000000001).</p>"), after)
        XCTAssertTrue(after.contains("</span> Credited by sam.</p>"), after)
        XCTAssertTrue(after.contains("Alert #\(alert) resolved: credited to order order-alice-1 by sam."))
        XCTAssertTrue(after.contains("Credited coins_100 to order order-alice-1 (Apple transaction 2000000000000001) by sam."))

        let bob = try await session.get("/users?id=bob").text
        XCTAssertTrue(bob.contains(">Credited coins_100 to order order-bob-1 at ") && bob.contains("</span> Credited by the worker (job #\(harness.fixture.creditedJob)).</p>"), bob)
        let nobody = try await session.get("/users?id=nobody").text
        XCTAssertTrue(nobody.contains(">No payment from Apple seen for this user.</p>"))
        XCTAssertTrue(nobody.contains("Nothing recorded for this user yet."))
        // A hostile user id and Apple error text stay text in the story and the verdict.
        let hostile = try await session.get("/users?id=" + (ConsoleHarness.xssUser.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")).text
        XCTAssertFalse(hostile.contains("<img") || hostile.contains("<script>alert"), "escaped everywhere")
        XCTAssertTrue(hostile.contains("Your payment (Apple transaction 2000000000000004, coins_100) reached us from Apple but is not credited yet."))
        await session.close()
        await harness.close()
    }

    func testTheOverviewNamesTheWorkersAliveAndSaysWhenNothingDrainsTheQueue() async throws {
        let harness = try await ConsoleHarness()
        let session = try ConsoleSession(baseURL: harness.baseURL)
        _ = try await session.signIn("vera", password: ConsoleHarness.password)
        _ = try await harness.client.query("SELECT iap.enqueue_receipt('dora', 'order-dora-1', 'cmVjZWlwdC1kb3Jh')")
        let idle = try await session.get("/").text
        XCTAssertTrue(idle.contains("nothing is draining the queue"), idle)

        _ = try await harness.client.query("""
            UPDATE iap.jobs SET state = 'running', leased_by = 'host-a-1-x', lease_expires_at = now() + interval '1 minute'
            WHERE user_id = 'dora'
            """)
        _ = try await harness.client.query("INSERT INTO iap.leader (name, leader_id, expires_at) VALUES ('maintenance', 'host-b-2-y', now() + interval '30 seconds')")
        let alive = try await session.get("/").text
        XCTAssertFalse(alive.contains("nothing is draining the queue"))
        XCTAssertTrue(alive.contains("<dt>alive</dt><dd>2</dd>"), alive)
        XCTAssertTrue(alive.contains("<code>host-a-1-x</code>") && alive.contains("<code>host-b-2-y</code> <span class=\"badge neutral\">leader</span>"))
        // An expired lease is no sign of life.
        _ = try await harness.client.query("UPDATE iap.jobs SET lease_expires_at = now() - interval '1 second' WHERE user_id = 'dora'")
        _ = try await harness.client.query("UPDATE iap.leader SET expires_at = now() - interval '1 second'")
        let gone = try await session.get("/").text
        XCTAssertTrue(gone.contains("<dt>alive</dt><dd>0</dd>"))
        await session.close()
        await harness.close()
    }

    func testTheFindBoxAnswersAnAppleOrderIDOnceLookedUp() async throws {
        let harness = try await ConsoleHarness(lookup: FakeOrderLookup())
        let session = try ConsoleSession(baseURL: harness.baseURL)
        _ = try await session.signIn("sam", password: ConsoleHarness.password)
        // Never looked up: the find box offers the lookup, prefilled.
        let unknown = try await session.get("/find?q=MK5TTTVWJH")
        XCTAssertEqual(unknown.status, 404)
        XCTAssertTrue(unknown.text.contains("href=\"/lookup?apple_order_id=MK5TTTVWJH\""))

        let looked = try await session.post("/lookup", [("csrf", try await session.csrfToken()), ("apple_order_id", "MK5TTTVWJH")])
        XCTAssertEqual(looked.status, 303)
        let stored: String = try await harness.scalar("SELECT result || ' ' || array_to_string(transaction_ids, ',') || ' ' || actor FROM iap.apple_order_lookups")
        XCTAssertEqual(stored, "found 2000000000000099,2000000000000098 sam")
        // Looked up, nothing of it in the ledger, no buyer known: back to the lookup page to credit it.
        let notCredited = try await session.get("/find?q=MK5TTTVWJH")
        XCTAssertEqual(notCredited.header("Location"), "/lookup?apple_order_id=MK5TTTVWJH")

        let credit = try await session.post("/lookup/credit", [("csrf", try await session.csrfToken()), ("apple_order_id", "MK5TTTVWJH"),
            ("transaction_id", "2000000000000099"), ("user_id", "alice"), ("order_id", "order-alice-1")])
        XCTAssertEqual(credit.status, 303)
        // The fake records no ledger row; the lookup row of the credit names the buyer: the find box leads to her.
        let toBuyer = try await session.get("/find?q=MK5TTTVWJH")
        XCTAssertEqual(toBuyer.header("Location"), "/users?id=alice")
        let alice = try await session.get("/users?id=alice").text
        XCTAssertTrue(alice.contains("Apple order MK5TTTVWJH looked up by sam: Apple returned 2000000000000099."), alice)
        // With the transaction in the ledger, the find box goes to it (through its job when it has one).
        _ = try await harness.client.query("""
            INSERT INTO iap.credits (transaction_id, order_id, user_id, product_id, quantity, environment, job_id, credited_by)
            VALUES ('2000000000000099', 'order-alice-1', 'alice', 'coins_100', 1, 'Production', NULL, 'sam')
            """)
        let toLedger = try await session.get("/find?q=MK5TTTVWJH")
        XCTAssertEqual(toLedger.header("Location"), "/users?id=alice")
        await session.close()
        await harness.close()
    }

    /// Two console processes behind a load balancer: the form posted to one, its result read from
    /// the other; once only, only by the session that posted it.
    func testFormResultsAreSharedByConsolesReadOnceAndOnlyByTheirSession() async throws {
        let harness = try await ConsoleHarness()
        var configuration = try ConsoleConfiguration(listen: "127.0.0.1:0")
        configuration.passwordHasher = ConsoleHarness.testHasher
        let other = ConsoleServer(configuration: configuration, client: harness.client, registry: MetricsRegistry(),
                                  logger: Logger(minimumLevel: .error, sink: CapturingLogSink()))
        let otherPort = try other.start()
        let session = try ConsoleSession(baseURL: harness.baseURL)
        _ = try await session.signIn("sam", password: ConsoleHarness.password)
        let alert = harness.fixture.alertToResolve
        let resolved = try await session.post("/alerts/\(alert)/resolve", [("csrf", try await session.csrfToken()), ("note", "refunded"),
                                                                           ("confirm_no_credit", "yes")])
        let location = try XCTUnwrap(resolved.header("Location"))
        let elsewhere = try ConsoleSession(baseURL: "http://127.0.0.1:\(otherPort)")
        for (name, value) in session.cookies { elsewhere.cookies[name] = value }
        let first = try await elsewhere.get(location).text, second = try await elsewhere.get(location).text
        XCTAssertTrue(first.contains("Alert #\(alert): resolved."), "read by the other process")
        XCTAssertFalse(second.contains("Alert #\(alert): resolved."), "read once")

        let again = try await session.post("/alerts/\(harness.fixture.xssAlert)/resolve", [("csrf", try await session.csrfToken()),
                                                                                          ("note", "x"), ("confirm_no_credit", "yes")])
        let viewer = try ConsoleSession(baseURL: harness.baseURL)
        _ = try await viewer.signIn("vera", password: ConsoleHarness.password)
        let stranger = try await viewer.get(try XCTUnwrap(again.header("Location"))).text
        let owner = try await session.get(try XCTUnwrap(again.header("Location"))).text
        XCTAssertFalse(stranger.contains(": resolved."), "another session reads nothing")
        XCTAssertTrue(owner.contains(": resolved."), "and did not use it up")
        // Expired rows go as new ones arrive.
        _ = try await harness.client.query("""
            INSERT INTO iap.console_form_results (token, session_hash, result, expires_at)
            SELECT 'old-' || i, '\\x00', '{}', now() - interval '1 hour' FROM generate_series(1, 5) AS i
            """)
        _ = try await session.post("/alerts/\(alert)/resolve", [("csrf", try await session.csrfToken()), ("note", "again")])
        let old: Int = try await harness.scalar("SELECT count(*)::int FROM iap.console_form_results WHERE token LIKE 'old-%'")
        XCTAssertEqual(old, 0)
        for client in [session, elsewhere, viewer] { await client.close() }
        await other.shutdown(grace: .seconds(1))
        await harness.close()
    }
}

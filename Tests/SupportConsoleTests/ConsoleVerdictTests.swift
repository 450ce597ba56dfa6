import Foundation
import HTTP
import XCTest

/// Every verdict follows from the whole story: each row builds one buyer's story (through the
/// console's own forms where support acts) and reads the verdict line a buyer is sent and the
/// detail beside it.
final class ConsoleVerdictTests: XCTestCase {
    struct Story {
        let name: String
        let user: String
        /// Builds the story; runs before the page is read.
        let build: (ConsoleHarness, ConsoleSession) async throws -> Void
        let line: String
        let detail: String
    }

    func testEachStoryReadsItsVerdict() async throws {
        let harness = try await ConsoleHarness()
        let session = try ConsoleSession(baseURL: harness.baseURL)
        _ = try await session.signIn("sam", password: ConsoleHarness.password)
        let client = harness.client
        func order(_ id: String, _ user: String, _ status: String = "open") async throws {
            _ = try await client.query("INSERT INTO iap.orders (order_id, user_id, product_id, status) VALUES ($1, $2, 'coins_100', $3)",
                                       [id, user, status])
        }
        func credit(_ transaction: String, _ order: String, _ user: String, job: Int?, by: String = "worker", revoked: Bool = false) async throws {
            _ = try await client.query("""
                INSERT INTO iap.credits (transaction_id, order_id, user_id, product_id, quantity, environment, job_id, credited_by,
                                         revoked_at, revocation_reason)
                VALUES ($1, $2, $3, 'coins_100', 1, 'Production', $4, $5,
                        CASE WHEN $6 THEN now() + interval '1 minute' END, CASE WHEN $6 THEN '1' END)
                """, [transaction, order, user, job, by, revoked])
        }
        func unpaidAlert(_ user: String, _ transaction: String, job: Int) async throws -> Int {
            try await client.query("""
                INSERT INTO iap.alerts (kind, transaction_id, job_id, user_id, product_id, reason, details)
                VALUES ('paid_not_credited', $1, $2, $3, 'coins_100', 'no_matching_order', '{}') RETURNING id
                """, [transaction, job, user])[0].decode(Int.self, at: 0)
        }
        let alice = harness.fixture.paidNotCreditedAlert
        let stories: [Story] = [
            Story(name: "paid and still owed", user: "alice", build: { _, _ in },
                  line: "Your payment (Apple transaction 2000000000000001, coins_100) reached us from Apple but is not credited yet.",
                  detail: "Open alert #\(alice) (job #\(harness.fixture.attentionJob)): credit it to an open order."),
            Story(name: "paid and credited", user: "bob", build: { _, _ in },
                  line: "Credited coins_100 to order order-bob-1 at ", detail: "Credited by the worker (job #\(harness.fixture.creditedJob))."),
            Story(name: "paid and refunded", user: "rita", build: { harness, _ in
                try await order("order-rita-1", "rita", "credited")
                let job = try await ConsoleFixture.job(client, user: "rita", order: "order-rita-1", state: "done", outcome: "credited",
                                                       transactions: ["2000000000000021"], error: nil)
                try await credit("2000000000000021", "order-rita-1", "rita", job: job, revoked: true)
            }, line: "Refunded: coins_100 to order order-rita-1 at ", detail: "; refund reason 1."),
            // The false verdict this table exists for: the buyer paid, support closed the alert as owed nothing.
            Story(name: "paid and closed without credit", user: "olga", build: { harness, session in
                let job = try await ConsoleFixture.job(client, user: "olga", order: nil, state: "attention", outcome: "paid_not_credited",
                                                       transactions: ["2000000000000031"], error: nil)
                let alert = try await unpaidAlert("olga", "2000000000000031", job: job)
                let resolved = try await session.post("/alerts/\(alert)/resolve", [("csrf", try await session.csrfToken()),
                    ("note", "refunded by Apple"), ("confirm_no_credit", "yes")])
                XCTAssertEqual(resolved.status, 303)
            }, line: "Your payment (Apple transaction 2000000000000031, coins_100) reached us from Apple and was not credited: "
                + "our support team closed it at ", detail: " closed without credit: “refunded by Apple (by sam)”."),
            Story(name: "paid, credited by support", user: "pete", build: { harness, session in
                try await order("order-pete-1", "pete")
                let job = try await ConsoleFixture.job(client, user: "pete", order: nil, state: "attention", outcome: "paid_not_credited",
                                                       transactions: ["2000000000000041"], error: nil)
                let alert = try await unpaidAlert("pete", "2000000000000041", job: job)
                let credited = try await session.post("/alerts/\(alert)/credit", [("csrf", try await session.csrfToken()),
                                                                                 ("order_choice", "order-pete-1")])
                XCTAssertEqual(credited.status, 303)
            }, line: "Credited coins_100 to order order-pete-1 at ", detail: "Credited by sam."),
            // From `support lookup-order --user --order` or the demo: the desk ties the Apple order id to the buyer.
            Story(name: "paid, credited through an Apple order lookup", user: "lena", build: { _, _ in
                try await order("order-lena-1", "lena", "credited")
                try await credit("2000000000000051", "order-lena-1", "lena", job: nil, by: "ops-linda")
                _ = try await client.query("""
                    INSERT INTO iap.apple_order_lookups (apple_order_id, user_id, transaction_ids, result, actor)
                    VALUES ('MQ7DEMO123', 'lena', '{2000000000000051}', 'found', 'ops-linda')
                    """)
            }, line: "Credited coins_100 to order order-lena-1 at ", detail: "Credited by ops-linda through Apple order lookup MQ7DEMO123."),
            Story(name: "replayed", user: "mallory", build: { _, _ in
                _ = try await ConsoleFixture.job(client, user: "mallory", order: nil, state: "failed", outcome: "replayed",
                                                 transactions: ["2000000000000002"], error: nil)
            }, line: "was already credited to another account; nothing was credited to yours from it.", detail: " ended replayed: see its receipt_replay alert."),
            Story(name: "still being verified", user: "quinn", build: { _, _ in
                _ = try await client.query("SELECT iap.enqueue_receipt('quinn', 'order-quinn-1', 'cmVjZWlwdC1xdWlubg==')")
            }, line: "Your payment is still being confirmed with Apple; it is credited by itself once Apple answers.", detail: " is queued (asked Apple 0 time(s))."),
            Story(name: "no payment seen", user: "nobody", build: { _, _ in },
                  line: "No payment from Apple seen for this user.", detail: "No order, job, ledger row, alert or lookup names this user id."),
        ]
        for story in stories {
            try await story.build(harness, session)
            let page = try await session.get("/users?id=\(story.user)").text
            let line = try XCTUnwrap(Self.paragraph("<p class=\"verdict\" id=\"verdict\" title=\"Click once to select it all, then copy\">", in: page), story.name)
            let detail = try XCTUnwrap(Self.paragraph("<p class=\"verdict-detail\"><span class=\"why\">For support, not the buyer:</span> ", in: page), story.name)
            XCTAssertTrue(line.contains(story.line), "\(story.name): \(line)")
            XCTAssertTrue(detail.contains(story.detail), "\(story.name): \(detail)")
            XCTAssertFalse(line.contains("#"), "\(story.name): no internal ids in the line a buyer reads: \(line)")
        }

        // The looked-up Apple order id leads back to the buyer, and the story says how she was credited.
        let found = try await session.get("/find?q=MQ7DEMO123")
        XCTAssertEqual(found.header("Location"), "/users?id=lena")
        let lena = try await session.get("/users?id=lena").text
        XCTAssertTrue(lena.contains("(Apple transaction 2000000000000051) by ops-linda through Apple order lookup MQ7DEMO123."), lena)

        // Closed as owed nothing is settled work: its job reads resolved, and the overview says how much is still open.
        let olga = try await session.get("/jobs?q=olga").text
        XCTAssertTrue(olga.contains(">owed nothing</span>"), olga)
        XCTAssertFalse(olga.contains("<span class=\"badge bad\" title=\"Finished, but a person must act"))
        let overview = try await session.get("/").text
        let open: Int = try await harness.scalar("SELECT count(*)::int - 2 FROM iap.jobs WHERE state = 'attention'")
        XCTAssertTrue(overview.contains("\(open) still open: 1 credited since, 1 closed as owed nothing"), overview)
        await session.close()
        await harness.close()
    }

    /// The text of the paragraph that starts with `opening`.
    static func paragraph(_ opening: String, in page: String) -> String? {
        guard let start = page.range(of: opening) else { return nil }
        return String(page[start.upperBound...].prefix { $0 != "<" })
    }
}

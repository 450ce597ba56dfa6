import Foundation
import HTTP
import XCTest

/// A credit from an Apple order lookup has the alert credit's form, confirmation, refusals and
/// audit: a mistyped order or another buyer's is refused in words beside the transaction (never
/// a 500), audited, with what was typed and the lookup's result kept.
final class ConsoleLookupCreditTests: XCTestCase {
    func testALookupCreditIsRefusedBesideItsRowAuditedAndKeepsTheResult() async throws {
        let harness = try await ConsoleHarness(lookup: FakeOrderLookup())
        let session = try ConsoleSession(baseURL: harness.baseURL)
        _ = try await session.signIn("sam", password: ConsoleHarness.password)
        let looked = try await session.post("/lookup", [("csrf", try await session.csrfToken()), ("apple_order_id", "MK5TTTVWJH")])
        let result = try await session.get(try XCTUnwrap(looked.header("Location"))).text
        XCTAssertTrue(result.contains("<form class=\"inline credit\" method=\"post\" action=\"/lookup/credit\" data-confirm-credit "
                                      + "data-product=\"coins_100\" data-transaction=\"2000000000000099\" data-apple-order=\"MK5TTTVWJH\""), result)

        func credit(_ user: String, _ order: String) async throws -> (location: String, page: String) {
            let posted = try await session.post("/lookup/credit", [("csrf", try await session.csrfToken()), ("return_to", "/lookup"),
                ("apple_order_id", "MK5TTTVWJH"), ("transaction_id", "2000000000000099"), ("user_id", user), ("order_id", order)])
            XCTAssertEqual(posted.status, 303, "a refusal is an answer, not a failure: \(posted.text)")
            let location = try XCTUnwrap(posted.header("Location"))
            return (location, try await session.get(location).text)
        }
        for (user, order, why) in [("alice", "order-alice-9", "Not credited: there is no order order-alice-9;"),
                                   ("alice", "order-carl-1", "Not credited: order order-carl-1 belongs to another user; nothing was changed.")] {
            let (location, page) = try await credit(user, order)
            XCTAssertTrue(location.hasSuffix("#outcome"), location)
            // Beside the transaction's row, after its id: the notice is in that row.
            let row = try XCTUnwrap(page.range(of: "id=\"transaction-2000000000000099\"").map { String(page[$0.lowerBound...].prefix(3000)) }, page)
            XCTAssertTrue(row.prefix(while: { $0 != "\n" }).contains("<p class=\"notice bad beside\" id=\"outcome\" tabindex=\"-1\">\(why)"), row)
            XCTAssertTrue(page.contains("role=\"status\" aria-live=\"polite\">\(why)"), "and in the page's live region")
            XCTAssertTrue(page.contains("value=\"\(order)\" aria-label=\"Order id for transaction 2000000000000099\""), "the typed order kept")
            XCTAssertTrue(page.contains("id=\"transaction-2000000000000098\""), "the lookup's result is still shown")
            // Back (or a reload) within ten minutes shows the result again.
            let again = try await session.get(location).text
            XCTAssertTrue(again.contains("id=\"transaction-2000000000000099\""), "Back keeps the lookup's result")
        }
        let refused: [String] = try await harness.client.query("""
            SELECT details->>'order_id' || ' ' || (details->>'reason') FROM iap.audit_log
            WHERE action = 'lookup_credit' AND details->>'result' = 'refused' ORDER BY id
            """).map { try $0.decode(String.self, at: 0) }
        XCTAssertEqual(refused.count, 2, "each refused attempt is audited")
        XCTAssertTrue(refused.first?.hasPrefix("order-alice-9 Not credited: there is no order order-alice-9") == true, "\(refused)")

        let (_, done) = try await credit("alice", "order-alice-1")
        XCTAssertTrue(done.contains("<p class=\"notice ok beside\" id=\"outcome\" tabindex=\"-1\">Transaction 2000000000000099 of Apple order "
                                    + "MK5TTTVWJH, for user alice: credited 2000000000000099 to order order-alice-1.</p>"), done)
        let credited: Int = try await harness.scalar(
            "SELECT count(*)::int FROM iap.audit_log WHERE action = 'lookup_credit' AND details->>'result' LIKE 'credited%'")
        XCTAssertEqual(credited, 1)
        await session.close()
        await harness.close()
    }
}

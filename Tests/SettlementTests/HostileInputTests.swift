import AppleSim
import Foundation
import Postgres
import XCTest

/// Quotes, backslashes, SQL fragments, multibyte text and 10 KB strings through every text
/// field, end to end: parameters everywhere, so they are only ever data.
final class HostileInputTests: XCTestCase {
    func testHostileStringsAreJustData() async throws {
        let f = try await SettlementFixture()
        let long = String(repeating: "長", count: 10_000)
        let nasty = [
            #"'; DROP TABLE iap.credits; --"#, #"\"#, #"a\"b\\c'd"#, "x\ty\nz", "💸 {\"json\": [1]}", #"$1 $2 %s %n"#, long,
        ]
        for (index, text) in nasty.enumerated() {
            let user = "u-\(index)-" + text
            let order = "o-\(index)-" + text
            let product = "p-\(index)-" + text.prefix(200)
            try await f.order(order, user: user, product: String(product))
            let receipt = f.receipt([.init(transactionID: "tx-\(index)-" + text, productID: String(product))])
            let job = try await f.enqueue(user: user, order: order, receipt: receipt)
            let finished = try await f.finished(job)
            XCTAssertEqual(finished.outcome, "credited", "case \(index): \(finished.lastError ?? "")")
            let ledger = try await f.client.query("SELECT user_id, order_id FROM iap.credits WHERE transaction_id = $1", ["tx-\(index)-" + text])
            XCTAssertEqual(try ledger.first?.decode(String.self, at: 0), user)
            XCTAssertEqual(try ledger.first?.decode(String.self, at: 1), order)
            // And as an alert's fields (paid, no order for this product).
            let orphan = try await f.finished(try await f.enqueue(user: user, order: nil, receipt: f.receipt(
                [.init(transactionID: "orphan-\(index)-" + text, productID: "none-" + text.prefix(100))])))
            XCTAssertEqual(orphan.outcome, "paid_not_credited")
        }
        let tables = try await f.client.query("SELECT count(*) FROM iap.credits")[0].decode(Int.self, at: 0)
        XCTAssertEqual(tables, nasty.count, "the ledger is intact")
        // NUL is not valid text in PostgreSQL: a clear error, never a partial job.
        do {
            _ = try await f.enqueue(user: "nul\u{0}user", order: "o", receipt: "AAAA")
            XCTFail("NUL must be refused")
        } catch let error as PostgresError {
            XCTAssertEqual(error.sqlState, "22021")
        }
        let stray = try await f.client.query("SELECT count(*) FROM iap.jobs WHERE user_id LIKE 'nul%'")[0].decode(Int.self, at: 0)
        XCTAssertEqual(stray, 0)
        await f.stop()
    }
}

import AppStore
import AppleSim
import Foundation
import Observability
import Postgres
import Settlement
import XCTest

/// A buyer's Apple order id → Look Up Order ID (apple-sim over HTTP) → verified
/// transactions → credited once through the same path as `alerts credit`.
final class OrderLookupTests: XCTestCase {
    private func desk(_ f: SettlementFixture) throws -> OrderLookupDesk {
        OrderLookupDesk(client: f.client, api: try XCTUnwrap(f.api), signedData: f.signedData, metrics: f.metrics,
                        logger: Logger(sink: CapturingLogSink()))
    }

    private func payload(_ id: String) -> JWSTransactionPayload {
        JWSTransactionPayload(transactionId: id, originalTransactionId: id, bundleId: SettlementFixture.bundleID, productId: "coins_100",
                              quantity: 2, purchaseDate: Date(), environment: "Production")
    }

    func testAValidOrderIsCreditedOnceAndAnotherUsersPaymentIsRefused() async throws {
        let f = try await SettlementFixture(serverAPI: true)
        f.simulator.serverAPI.registerOrder("MK5TTTVWJH", transactions: [payload("ol-t1")])
        try await f.order("ol-1", user: "ann", product: "coins_100")
        try await f.order("ol-2", user: "bob", product: "coins_100")
        let desk = try desk(f)

        let found = try await desk.lookUp(appleOrderID: "MK5TTTVWJH")
        XCTAssertEqual(found.transactions.map(\.transactionID), ["ol-t1"])
        XCTAssertEqual(found.transactions.first?.ledger, .notCredited)
        XCTAssertEqual(found.transactions.first?.quantity, 2)

        let first = try await desk.credit(appleOrderID: "MK5TTTVWJH", transactionID: "ol-t1", userID: "ann", orderID: "ol-1", actor: "tess")
        XCTAssertEqual(first, .credited(orderID: "ol-1"))
        let again = try await desk.credit(appleOrderID: "MK5TTTVWJH", transactionID: "ol-t1", userID: "ann", orderID: "ol-1", actor: "tess")
        XCTAssertEqual(again, .alreadyCredited(orderID: "ol-1"))
        let ledger = try await f.ledger()
        XCTAssertEqual(ledger, ["ol-t1": "ol-1"])
        let quantity = try await f.client.query("SELECT quantity, credited_by FROM iap.credits WHERE transaction_id = 'ol-t1'")[0]
        XCTAssertEqual(try quantity.decode(Int.self, at: 0), 2)
        XCTAssertEqual(try quantity.decode(String.self, at: 1), "tess", "the ledger names the person who credited")
        // Whoever asks (the console, the CLI, the demo), the credit ties the Apple order id to the buyer: the find box answers it.
        let tied = try await f.client.query("SELECT apple_order_id || ' ' || user_id || ' ' || actor FROM iap.apple_order_lookups ORDER BY id")
            .map { try $0.decode(String.self, at: 0) }
        XCTAssertEqual(tied, ["MK5TTTVWJH ann tess", "MK5TTTVWJH ann tess"])
        let shown = try await desk.lookUp(appleOrderID: "MK5TTTVWJH")
        XCTAssertEqual(shown.transactions.first?.ledger, .credited(userID: "ann", orderID: "ol-1", revoked: false))

        // The same payment asked for by another buyer: refused, nothing credited.
        do {
            _ = try await desk.credit(appleOrderID: "MK5TTTVWJH", transactionID: "ol-t1", userID: "bob", orderID: "ol-2", actor: "tess")
            XCTFail("credited a payment that belongs to ann")
        } catch let error as OrderLookupError {
            XCTAssertEqual(error, .creditedToAnotherUser(transactionID: "ol-t1", userID: "ann", orderID: "ol-1"))
        }
        let after = try await f.ledger()
        XCTAssertEqual(after, ["ol-t1": "ol-1"])
        let open = try await f.orderStatus("ol-2")
        XCTAssertEqual(open, "open")
        await f.stop()
    }

    func testAnInvalidOrderIDSaysSoClearly() async throws {
        let f = try await SettlementFixture(serverAPI: true)
        let desk = try desk(f)
        for id in ["NOSUCHORDER", "bad/../id", ""] {
            do {
                _ = try await desk.lookUp(appleOrderID: id)
                XCTFail("\(id) was accepted")
            } catch let error as OrderLookupError {
                XCTAssertEqual(error, .invalidOrderID(id))
                XCTAssertTrue(error.description.contains("Apple does not know order id"), error.description)
            }
        }
        XCTAssertEqual(f.simulator.serverAPI.apiRequestsTotal, 1, "ids that cannot be order ids never reach Apple")
        await f.stop()
    }
}

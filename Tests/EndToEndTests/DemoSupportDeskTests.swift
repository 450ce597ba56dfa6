import Foundation
import Observability
import Postgres
import Settlement
import TestSupport
import Workloads
import XCTest

final class DemoSupportDeskTests: XCTestCase {
    /// The demo console's Apple order lookup answers from a live apple-sim and credits once.
    func testTheDemoSupportDeskLooksUpAndCreditsAgainstAppleSim() async throws {
        let url = try await TestDatabase.fresh()
        let client = PostgresClient(conninfo: url, maxConnections: 2)
        let support = try await DemoSupportDesk.start(client: client, logger: Logger(minimumLevel: .error))
        let found = try await support.lookup.lookUp(appleOrderID: DemoSupportDesk.appleOrderID)
        XCTAssertEqual(found.transactions.map(\.transactionID), ["4000009"])
        let result = try await support.lookup.credit(appleOrderID: DemoSupportDesk.appleOrderID, transactionID: "4000009",
                                                     userID: "quinn", orderID: "order-quinn-1", actor: "test")
        XCTAssertEqual(result, .credited(orderID: "order-quinn-1"))
        await support.shutdown()
        await client.close()
    }
}

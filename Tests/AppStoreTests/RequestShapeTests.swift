import AppStore
import AppleSim
import Foundation
import HTTP
import XCTest

/// Every request the client sends Apple, endpoint by endpoint, against apple-sim's documented shapes
/// (integer timestamps, documented fields of documented types, no undocumented query or
/// body): a field that goes out in another shape is refused with Apple's 400 and fails here first.
/// (Send Consumption Information is checked with the bodies the responder builds, in SettlementTests;
/// Get Transaction History is not called by the product.)
final class RequestShapeTests: XCTestCase {
    private func client(_ h: SimHarness) throws -> AppStoreServerAPIClient {
        try AppStoreServerAPIClient(
            configuration: AppStoreServerAPIConfiguration(
                productionURL: h.sim.baseURL, sandboxURL: h.sim.baseURL.appendingPathComponent("sandbox"),
                issuerID: SimServerAPI.defaultIssuerID, keyID: SimServerAPI.defaultKeyID, bundleID: JWSFixtures.bundleID,
                privateKey: h.sim.serverAPI.apiPrivateKey, requestTimeout: .seconds(5)),
            transport: h.transport)
    }

    func testGetTransactionInfoHasAppleShape() async throws {
        let h = try SimHarness.start()
        h.sim.serverAPI.register(JWSFixtures.transaction("9100000000000001", signedDate: nil))
        h.sim.serverAPI.register(JWSFixtures.transaction("9100000000000002", environment: "Sandbox", signedDate: nil))
        let api = try client(h)
        guard case .found(_, .production) = await api.getTransactionInfo(transactionID: "9100000000000001") else { return XCTFail() }
        guard case .found(_, .sandbox) = await api.getTransactionInfo(transactionID: "9100000000000002") else { return XCTFail() }
        guard case .notFound = await api.getTransactionInfo(transactionID: "9100000000000003") else { return XCTFail() }
        XCTAssertEqual(h.sim.serverAPI.requestCounts.keys.filter { $0.hasSuffix(":400") }, [], "nothing refused as malformed")
        await h.stop()
    }

    func testGetNotificationHistoryHasAppleShape() async throws {
        let h = try SimHarness.start()
        let now = Date()  // fractional seconds, as every span the puller builds
        for i in 0..<45 {
            h.sim.serverAPI.recordNotification("p-\(i)", sentAt: now.addingTimeInterval(-3000 + Double(i)), delivered: i % 3 != 0)
        }
        let api = try client(h)
        let spans = [
            NotificationHistoryRequest(startDate: now.addingTimeInterval(-72 * 3600 + 0.123_456), endDate: now, onlyFailures: true),
            NotificationHistoryRequest(startDate: now.addingTimeInterval(-3600.5), endDate: now.addingTimeInterval(0.000_4)),
            NotificationHistoryRequest(startDate: now.addingTimeInterval(-3600), endDate: now, notificationType: "CONSUMPTION_REQUEST",
                                       onlyFailures: false),
            NotificationHistoryRequest(startDate: now.addingTimeInterval(-3600), endDate: now, notificationType: "REFUND",
                                       notificationSubtype: "VOLUNTARY"),
            NotificationHistoryRequest(startDate: now.addingTimeInterval(-3600), endDate: now, transactionId: "9100000000000001"),
        ]
        for request in spans {
            var token: String?
            var pages = 0
            repeat {
                let page = await api.getNotificationHistory(request, paginationToken: token)
                guard case .success(let answer) = page else { return XCTFail("\(request): \(page)") }
                token = answer.hasMore ? answer.paginationToken : nil
                pages += 1
            } while token != nil && pages < 10
            XCTAssertNil(token, "every page of \(request) read with its own body")
        }
        await h.stop()
    }

    func testLookUpOrderIDHasAppleShape() async throws {
        let h = try SimHarness.start()
        h.sim.serverAPI.registerOrder("MK5TTTVWJH", transactions: [JWSFixtures.transaction("9100000000000004", signedDate: nil)])
        let api = try client(h)
        guard case .success(let found) = await api.lookUpOrderID("MK5TTTVWJH") else { return XCTFail() }
        XCTAssertEqual(found.status, OrderLookupResponse.valid)
        guard case .success(let unknown) = await api.lookUpOrderID("ZZ9ZZZZZZZ") else { return XCTFail() }
        XCTAssertEqual(unknown.status, OrderLookupResponse.invalid)
        await h.stop()
    }
}

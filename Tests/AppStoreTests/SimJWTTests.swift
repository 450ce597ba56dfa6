import AppStore
import AppleSim
import Foundation
import HTTP
import StoreKitCrypto
import XCTest

/// apple-sim checks the App Store Server API bearer token as Apple does (ES256 with the configured
/// key, `kid`, `iss`, `iat`, `exp` at most 60 minutes later, `aud`, `bid`), on every endpoint.
final class SimJWTTests: XCTestCase {
    private func status(_ h: SimHarness, token: String) async throws -> Int {
        let request = HTTPClientRequest(url: h.sim.baseURL.appendingPathComponent("inApps/v1/lookup/MK5TTTVWJH"),
                                        headers: [("Authorization", "Bearer \(token)")])
        return try await h.transport.send(request, timeout: .seconds(5)).status
    }

    private func token(_ h: SimHarness, key: ES256PrivateKey? = nil, kid: String = SimServerAPI.defaultKeyID,
                       aud: String = AppStoreJWT.audience, iat: Date = Date(), lifetime: Int64 = 300) throws -> String {
        let issued = Int64(iat.timeIntervalSince1970)
        let claims = AppStoreJWTClaims(iss: SimServerAPI.defaultIssuerID, iat: issued, exp: issued + lifetime, aud: aud, bid: JWSFixtures.bundleID)
        return try JWSCompact.sign(header: JWSHeader(alg: "ES256", kid: kid, typ: "JWT"), payload: Array(try JSONEncoder().encode(claims)),
                                   key: key ?? h.sim.serverAPI.apiPrivateKey)
    }

    func testTheSimulatorRefusesBadTokensAndAcceptsTheClients() async throws {
        let h = try SimHarness.start()
        h.sim.serverAPI.registerOrder("MK5TTTVWJH", transactions: [JWSFixtures.transaction("6000000000000001", signedDate: nil)])
        let wrongAudience = try await status(h, token: try token(h, aud: "appstoreconnect-v2"))
        XCTAssertEqual(wrongAudience, 401)
        let expired = try await status(h, token: try token(h, iat: Date().addingTimeInterval(-7200)))
        XCTAssertEqual(expired, 401)
        let tooLong = try await status(h, token: try token(h, lifetime: 7200))
        XCTAssertEqual(tooLong, 401, "exp more than 60 minutes after iat")
        let wrongKid = try await status(h, token: try token(h, kid: "OTHERKEY01"))
        XCTAssertEqual(wrongKid, 401)
        let wrongSignature = try await status(h, token: try token(h, key: try ES256PrivateKey.generate()))
        XCTAssertEqual(wrongSignature, 401)
        let good = try await status(h, token: try token(h))
        XCTAssertEqual(good, 200)

        // The client's own tokens pass, on each endpoint family.
        let client = try AppStoreServerAPIClient(
            configuration: AppStoreServerAPIConfiguration(
                productionURL: h.sim.baseURL, sandboxURL: h.sim.baseURL.appendingPathComponent("sandbox"),
                issuerID: SimServerAPI.defaultIssuerID, keyID: SimServerAPI.defaultKeyID, bundleID: JWSFixtures.bundleID,
                privateKey: h.sim.serverAPI.apiPrivateKey, requestTimeout: .seconds(5)),
            transport: h.transport)
        guard case .success(let order) = await client.lookUpOrderID("MK5TTTVWJH") else { return XCTFail() }
        XCTAssertEqual(order.status, OrderLookupResponse.valid)
        XCTAssertEqual(order.signedTransactions.count, 1)
        guard case .success(let history) = await client.getNotificationHistory(
            NotificationHistoryRequest(startDate: Date().addingTimeInterval(-3600), endDate: Date(), onlyFailures: true),
            paginationToken: nil) else { return XCTFail() }
        XCTAssertFalse(history.hasMore)
        let consumption = await client.sendConsumptionInformation(
            transactionID: "6000000000000001",
            ConsumptionRequest(customerConsented: true, consumptionPercentage: 100_000, deliveryStatus: .delivered,
                               refundPreference: .grantProrated, sampleContentProvided: false))
        guard case .success = consumption else { return XCTFail("\(consumption)") }
        // The sim counted every request, per second, for the fleet-limit checks.
        XCTAssertEqual(h.sim.serverAPI.apiRequestsTotal, 9)
        let (statsStatus, stats) = try await h.call("GET", "sim/stats")
        XCTAssertEqual(statsStatus, 200)
        XCTAssertEqual((stats["appstore_api"] as? [String: Any])?["requests_total"] as? Int, 9)
        await h.stop()
    }
}

import AppStore
import AppleSim
import Foundation
@testable import Settlement
import XCTest

/// Send Consumption Information (v2): every body the responder can build (each ledger state, each
/// answer of the web tier's `iap.consumption_info`, each REFUND_PREFERENCE) goes to apple-sim, which
/// checks it against Apple's documented `ConsumptionRequest` and refuses a field out of shape.
final class ConsumptionShapeTests: XCTestCase {
    func testEveryBodyTheResponderBuildsHasAppleShape() async throws {
        let simulator = AppleSimulator()
        _ = try simulator.start()
        let id = "9200000000000001"
        simulator.serverAPI.register(JWSTransactionPayload(transactionId: id, originalTransactionId: id, bundleId: SettlementFixture.bundleID,
                                                           productId: "coins_100", purchaseDate: Date(), environment: "Production"))
        let api = try AppStoreServerAPIClient(configuration: AppStoreServerAPIConfiguration(
            productionURL: simulator.baseURL, sandboxURL: simulator.baseURL.appendingPathComponent("sandbox"),
            issuerID: SimServerAPI.defaultIssuerID, keyID: SimServerAPI.defaultKeyID, bundleID: SettlementFixture.bundleID,
            privateKey: simulator.serverAPI.apiPrivateKey))
        var sent = 0
        for (credited, revoked) in [(true, false), (true, true), (false, false)] {
            let request = ConsumptionRequestRow(transactionID: id, environment: .production, respondBy: Date().addingTimeInterval(3600),
                                                userID: "u", credited: credited, revoked: revoked)
            for percentage in [nil, 0, 1, 42_000, ConsumptionRequest.fullConsumption] {
                for sample in [true, false] {
                    for preference in [nil] + RefundPreference.allCases.map(Optional.some) {
                        let info = ConsumptionInfo(consented: true, percentage: percentage, sampleContentProvided: sample)
                        let body = ConsumptionResponder.body(request, info, refundPreference: preference)
                        let result = await api.sendConsumptionInformation(transactionID: id, body)
                        guard case .success = result else { return XCTFail("\(body): \(result)") }
                        sent += 1
                    }
                }
            }
        }
        XCTAssertEqual(simulator.serverAPI.consumptionAnswers.count, sent)
        await simulator.shutdown()
    }
}

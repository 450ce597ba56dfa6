import AppStore
import AppleSim
import Foundation
import StoreKitCrypto
import XCTest

final class SignedDataNotificationTests: XCTestCase {
    private let chain = JWSFixtures.chain

    private func notification(type: String = "ONE_TIME_CHARGE", uuid: String = "0c5a0b1e-1111-4a4a-9c9c-000000000001",
                              transaction: JWSTransactionPayload? = JWSFixtures.transaction(), bundle: String = JWSFixtures.bundleID,
                              appID: Int64? = JWSFixtures.appAppleID, environment: StoreKitEnvironment = .production) throws -> String {
        try chain.signNotification(type: type, uuid: uuid, transaction: transaction, bundleID: bundle, appAppleID: appID,
                                   environment: environment, signedDate: JWSFixtures.signedDate)
    }

    private func outcome(_ jws: String, verifier: StoreKitSignedDataVerifier = JWSFixtures.verifier()) -> String {
        do {
            _ = try verifier.verifyNotification(jws)
            return "ok"
        } catch {
            return error.reason.rawValue
        }
    }

    func testNotificationWithInnerTransactionIsVerified() throws {
        let verified = try JWSFixtures.verifier().verifyNotification(try notification(type: "REFUND"))
        XCTAssertEqual(verified.payload.notificationType, "REFUND")
        XCTAssertEqual(verified.payload.notificationUUID, "0c5a0b1e-1111-4a4a-9c9c-000000000001")
        XCTAssertEqual(verified.payload.signedDate, JWSFixtures.signedDate)
        XCTAssertEqual(verified.payload.data?.appAppleId, JWSFixtures.appAppleID)
        XCTAssertEqual(verified.transaction?.transaction.transactionID, "2000000123456789")
        XCTAssertEqual(verified.transaction?.transaction.quantity, 2)
    }

    func testTestNotificationWithoutTransaction() throws {
        let verified = try JWSFixtures.verifier().verifyNotification(try notification(type: "TEST", transaction: nil))
        XCTAssertEqual(verified.payload.notificationType, "TEST")
        XCTAssertNil(verified.transaction)
    }

    func testNotificationClaimsAreChecked() throws {
        XCTAssertEqual(outcome(try notification(bundle: "com.evil.clone")), "bundle_mismatch")
        XCTAssertEqual(outcome(try notification(appID: 42)), "app_id_mismatch")
        XCTAssertEqual(outcome(try notification(appID: nil)), "app_id_mismatch")
        let unconfigured = try StoreKitSignedDataVerifier(configuration: .init(bundleID: JWSFixtures.bundleID), trustedRoots: [chain.root])
        XCTAssertEqual(outcome(try notification(), verifier: unconfigured), "app_id_mismatch")
        XCTAssertEqual(outcome(try notification(environment: .sandbox)), "environment_mismatch")
        // Sandbox notifications carry no app id requirement (Apple's library does the same).
        XCTAssertEqual(outcome(try notification(appID: nil, environment: .sandbox),
                               verifier: JWSFixtures.verifier(allowSandbox: true)), "ok")
    }

    func testInnerTransactionFailuresAreReportedWithTheirOwnReason() throws {
        let foreignInner = NotificationPayload(
            notificationType: "ONE_TIME_CHARGE", notificationUUID: "u-2", signedDate: JWSFixtures.signedDate,
            data: NotificationData(appAppleId: JWSFixtures.appAppleID, bundleId: JWSFixtures.bundleID, environment: "Production",
                                   signedTransactionInfo: try JWSFixtures.otherChain.signTransaction(JWSFixtures.transaction())))
        let signed = try chain.signNotification(foreignInner)
        do {
            _ = try JWSFixtures.verifier().verifyNotification(signed)
            XCTFail("accepted")
        } catch {
            XCTAssertEqual(error.reason, .chainInvalid)
            XCTAssertTrue(error.detail.hasPrefix("signedTransactionInfo: "), error.detail)
        }
        XCTAssertEqual(outcome(try notification(transaction: JWSFixtures.transaction(bundle: "com.evil.clone"))), "bundle_mismatch")
        let missingUUID = JWSFixtures.token(header: ["alg": "ES256", "x5c": chain.x5c],
                                            payload: JWSFixtures.json(["notificationType": "TEST", "data": ["bundleId": JWSFixtures.bundleID]]))
        XCTAssertEqual(outcome(missingUUID), "payload_invalid")
    }
}

import AppStore
import AppleSim
import Foundation
import StoreKitCrypto
import XCTest

final class SignedDataVerifierTests: XCTestCase {
    private let chain = JWSFixtures.chain

    func testValidTransactionMapsToAppleTransaction() throws {
        let jws = try chain.signTransaction(JWSFixtures.transaction())
        let verified = try JWSFixtures.verifier().verifyTransaction(jws)
        XCTAssertEqual(verified.environment, .production)
        XCTAssertEqual(verified.payload.signedDate, JWSFixtures.signedDate)
        XCTAssertEqual(verified.payload.type, "Consumable")
        XCTAssertEqual(verified.transaction, AppleTransaction(
            transactionID: "2000000123456789", originalTransactionID: "2000000123456789", productID: "coins_100",
            quantity: 2, purchaseDate: Date(timeIntervalSince1970: 1_763_699_990),
            appAccountToken: UUID(uuidString: "6F1C2B4E-8A4D-4C1B-9B0A-2C7D5E3F1A90"), environment: .production))
    }

    func testRevokedTransactionIsMarkedRevoked() throws {
        var payload = JWSFixtures.transaction()
        payload.revocationDate = Date(timeIntervalSince1970: 1_763_700_500)
        payload.revocationReason = "1"
        let transaction = try JWSFixtures.verifier().verifyTransaction(chain.signTransaction(payload)).transaction
        XCTAssertTrue(transaction.isRevoked)
        XCTAssertEqual(transaction.revocationReason, "1")
        XCTAssertEqual(transaction.revocationDate, Date(timeIntervalSince1970: 1_763_700_500))
    }

    func testTamperedPayloadIsRejected() throws {
        let parts = try chain.signTransaction(JWSFixtures.transaction()).split(separator: ".").map(String.init)
        let forged = JWSBase64URL.encode(SimSigningChain.jsonForTests(JWSFixtures.transaction("9999")))
        XCTAssertEqual(JWSFixtures.verifier().transactionOutcome([parts[0], forged, parts[2]].joined(separator: ".")),
                       "signature_invalid")
        var flipped = JWSBase64URL.decode(parts[2])!
        flipped[10] ^= 1
        XCTAssertEqual(JWSFixtures.verifier().transactionOutcome([parts[0], parts[1], JWSBase64URL.encode(flipped)].joined(separator: ".")),
                       "signature_invalid")
    }

    func testSignatureByAnotherKeyIsRejected() throws {
        let jws = try JWSCompact.sign(header: JWSHeader(alg: "ES256", x5c: chain.x5c),
                                      payload: SimSigningChain.jsonForTests(JWSFixtures.transaction()),
                                      key: ES256PrivateKey.generate())
        XCTAssertEqual(JWSFixtures.verifier().transactionOutcome(jws), "signature_invalid")
    }

    func testMissingMarkerOIDsAreRejected() throws {
        let noLeafOID = try SimSigningChain(options: .init(validity: JWSFixtures.chainValidity, leafHasMarkerOID: false))
        XCTAssertEqual(JWSFixtures.verifier(roots: [noLeafOID.root]).transactionOutcome(
            try noLeafOID.signTransaction(JWSFixtures.transaction())), "leaf_oid_missing")
        let noIntermediateOID = try SimSigningChain(options: .init(validity: JWSFixtures.chainValidity, intermediateHasMarkerOID: false))
        XCTAssertEqual(JWSFixtures.verifier(roots: [noIntermediateOID.root]).transactionOutcome(
            try noIntermediateOID.signTransaction(JWSFixtures.transaction())), "intermediate_oid_missing")
    }

    func testChainToAnUntrustedRootIsRejected() throws {
        let jws = try JWSFixtures.otherChain.signTransaction(JWSFixtures.transaction())
        XCTAssertEqual(JWSFixtures.verifier().transactionOutcome(jws), "chain_invalid")
        // The bundled Apple root is the default trust anchor: a simulator chain is refused by it.
        let appleTrusting = try StoreKitSignedDataVerifier(configuration: .init(bundleID: JWSFixtures.bundleID))
        XCTAssertEqual(appleTrusting.transactionOutcome(try chain.signTransaction(JWSFixtures.transaction())), "chain_invalid")
        // A root substituted inside x5c changes nothing: only configured roots are trusted.
        var header = ["alg": "ES256", "x5c": [chain.x5c[0], chain.x5c[1], JWSFixtures.otherChain.x5c[2]]] as [String: Any]
        XCTAssertEqual(JWSFixtures.verifier(roots: [JWSFixtures.otherChain.root]).transactionOutcome(
            JWSFixtures.token(header: header, payload: SimSigningChain.jsonForTests(JWSFixtures.transaction()))), "chain_invalid")
        header["x5c"] = [chain.x5c[0], chain.x5c[2], chain.x5c[1]]  // order matters: x5c[1] must be the intermediate
        XCTAssertEqual(JWSFixtures.verifier().transactionOutcome(
            JWSFixtures.token(header: header, payload: SimSigningChain.jsonForTests(JWSFixtures.transaction()))), "chain_invalid")
    }

    func testLeafExpiredAtSignedDateIsRejectedEvenWhenTheChainIsCached() throws {
        let leafValidity = JWSFixtures.chainValidity.lowerBound...Date(timeIntervalSince1970: 1_764_000_000)
        let shortLeaf = try SimSigningChain(options: .init(validity: JWSFixtures.chainValidity, leafValidity: leafValidity))
        let verifier = JWSFixtures.verifier(roots: [shortLeaf.root])
        XCTAssertEqual(verifier.transactionOutcome(try shortLeaf.signTransaction(JWSFixtures.transaction())), "ok")
        XCTAssertEqual(verifier.cachedChainCount, 1)
        let late = JWSFixtures.transaction(signedDate: Date(timeIntervalSince1970: 1_764_000_001))
        XCTAssertEqual(verifier.transactionOutcome(try shortLeaf.signTransaction(late)), "chain_invalid")
        let fresh = JWSFixtures.verifier(roots: [shortLeaf.root])
        XCTAssertEqual(fresh.transactionOutcome(try shortLeaf.signTransaction(late)), "chain_invalid")
        let early = JWSFixtures.transaction(signedDate: Date(timeIntervalSince1970: 1_700_000_000))
        XCTAssertEqual(fresh.transactionOutcome(try shortLeaf.signTransaction(early)), "chain_invalid")
    }

    func testChainCacheIsReusedAndBounded() throws {
        let verifier = JWSFixtures.verifier(cacheCapacity: 1)
        for id in 1...5 { XCTAssertEqual(verifier.transactionOutcome(try chain.signTransaction(JWSFixtures.transaction("t\(id)"))), "ok") }
        XCTAssertEqual(verifier.cachedChainCount, 1)
        let second = try SimSigningChain(options: .init(validity: JWSFixtures.chainValidity))
        let both = JWSFixtures.verifier(cacheCapacity: 1, roots: [chain.root, second.root])
        XCTAssertEqual(both.transactionOutcome(try chain.signTransaction(JWSFixtures.transaction())), "ok")
        XCTAssertEqual(both.transactionOutcome(try second.signTransaction(JWSFixtures.transaction())), "ok")
        XCTAssertEqual(both.cachedChainCount, 1)
        XCTAssertEqual(JWSFixtures.verifier(cacheCapacity: 0).transactionOutcome(try chain.signTransaction(JWSFixtures.transaction())), "ok")
    }

    func testX5CShapeIsChecked() {
        let payload = SimSigningChain.jsonForTests(JWSFixtures.transaction())
        let verifier = JWSFixtures.verifier()
        XCTAssertEqual(verifier.transactionOutcome(JWSFixtures.token(header: ["alg": "ES256", "x5c": Array(chain.x5c.prefix(2))], payload: payload)), "x5c_length")
        XCTAssertEqual(verifier.transactionOutcome(JWSFixtures.token(header: ["alg": "ES256", "x5c": chain.x5c + [chain.x5c[2]]], payload: payload)), "x5c_length")
        XCTAssertEqual(verifier.transactionOutcome(JWSFixtures.token(header: ["alg": "ES256", "x5c": [String]()], payload: payload)), "x5c_missing")
        XCTAssertEqual(verifier.transactionOutcome(JWSFixtures.token(header: ["alg": "ES256"], payload: payload)), "x5c_missing")
        XCTAssertEqual(verifier.transactionOutcome(JWSFixtures.token(header: ["alg": "ES256", "x5c": ["AAAA", "!!", chain.x5c[2]]], payload: payload)), "chain_invalid")
        XCTAssertEqual(verifier.transactionOutcome(JWSFixtures.token(header: ["alg": "ES256", "x5c": "nope"], payload: payload)), "jws_malformed")
    }

    func testOnlyES256IsAccepted() {
        let payload = SimSigningChain.jsonForTests(JWSFixtures.transaction())
        let verifier = JWSFixtures.verifier()
        for alg in ["none", "HS256", "RS256", "ES384", "es256", ""] {
            XCTAssertEqual(verifier.transactionOutcome(JWSFixtures.token(header: ["alg": alg, "x5c": chain.x5c], payload: payload)), "bad_alg", alg)
        }
        XCTAssertEqual(verifier.transactionOutcome(JWSFixtures.token(header: ["x5c": chain.x5c], payload: payload)), "bad_alg")
        // alg none with an empty signature, the classic downgrade.
        let unsigned = JWSCompact.assemble(headerJSON: JWSFixtures.json(["alg": "none", "x5c": chain.x5c]), payload: payload, signature: [])
        XCTAssertEqual(verifier.transactionOutcome(unsigned), "bad_alg")
    }

    func testMalformedInputsNeverCrash() {
        let verifier = JWSFixtures.verifier()
        for text in ["", ".", "..", "a.b", "a.b.c.d", "!!!.e30.AA", "e30.e30.e30", "bnVsbA.e30.AA",
                     String(repeating: "A", count: JWSCompact.maximumLength + 1)] {
            XCTAssertEqual(verifier.transactionOutcome(text), text == "e30.e30.e30" ? "bad_alg" : "jws_malformed", String(text.prefix(20)))
        }
        let notJSON = JWSFixtures.token(header: ["alg": "ES256", "x5c": chain.x5c], payload: Array("not json".utf8))
        XCTAssertEqual(verifier.transactionOutcome(notJSON), "payload_invalid")
        let noProduct = JWSFixtures.token(header: ["alg": "ES256", "x5c": chain.x5c],
                                          payload: JWSFixtures.json(["transactionId": "1", "bundleId": JWSFixtures.bundleID]))
        XCTAssertEqual(verifier.transactionOutcome(noProduct), "payload_invalid")
    }

    func testBundleAndEnvironmentAreChecked() throws {
        XCTAssertEqual(JWSFixtures.verifier().transactionOutcome(
            try chain.signTransaction(JWSFixtures.transaction(bundle: "com.evil.clone"))), "bundle_mismatch")
        let sandbox = try chain.signTransaction(JWSFixtures.transaction(environment: "Sandbox"))
        XCTAssertEqual(JWSFixtures.verifier().transactionOutcome(sandbox), "environment_mismatch")
        XCTAssertEqual(try JWSFixtures.verifier(allowSandbox: true).verifyTransaction(sandbox).transaction.environment, .sandbox)
        for environment in ["Xcode", "LocalTesting", "production", ""] {
            let jws = try chain.signTransaction(JWSFixtures.transaction(environment: environment))
            XCTAssertEqual(JWSFixtures.verifier(allowSandbox: true).transactionOutcome(jws), "environment_mismatch", environment)
        }
        let xcode = try chain.signTransaction(JWSFixtures.transaction(environment: "Xcode"))
        XCTAssertEqual(try JWSFixtures.verifier(environments: [.xcode]).verifyTransaction(xcode).transaction.environment, .sandbox)
        do {
            _ = try JWSFixtures.verifier().verifyTransaction(sandbox)
            XCTFail("accepted")
        } catch {
            XCTAssertEqual(error.outcome, "wrong_environment")
            XCTAssertEqual("\(error)", "environment_mismatch: environment Sandbox is not accepted (Production)")
        }
    }

    func testFractionalMillisecondDatesAndMissingSignedDate() throws {
        let payload = JWSFixtures.json(["transactionId": "f-1", "bundleId": JWSFixtures.bundleID, "productId": "coins_100",
                                        "environment": "Production", "purchaseDate": 1_700_000_000_000.5,
                                        "signedDate": "1763700000000.25", "quantity": 1])
        let verified = try JWSFixtures.verifier().verifyTransaction(try chain.sign(payload: payload))
        XCTAssertEqual(try XCTUnwrap(verified.payload.purchaseDate).timeIntervalSince1970, 1_700_000_000.0005, accuracy: 1e-6)
        XCTAssertEqual(try XCTUnwrap(verified.payload.signedDate).timeIntervalSince1970, 1_763_700_000.00025, accuracy: 1e-6)

        // Without signedDate the chain is judged at `now`.
        let undated = try chain.signTransaction(JWSFixtures.transaction(signedDate: nil))
        XCTAssertNoThrow(try JWSFixtures.verifier().verifyTransaction(undated, now: JWSFixtures.signedDate))
        XCTAssertThrowsError(try JWSFixtures.verifier().verifyTransaction(undated, now: Date(timeIntervalSince1970: 1_900_000_000))) { error in
            XCTAssertEqual((error as? StoreKitVerificationError)?.reason, .chainInvalid)
        }
    }

    func testEveryReasonHasAStableWordAndOutcome() {
        XCTAssertEqual(StoreKitVerificationError.Reason.allCases.map(\.rawValue), [
            "jws_malformed", "bad_alg", "x5c_missing", "x5c_length", "chain_invalid", "leaf_oid_missing",
            "intermediate_oid_missing", "signature_invalid", "payload_invalid", "bundle_mismatch",
            "environment_mismatch", "app_id_mismatch"])
        XCTAssertEqual(Set(StoreKitVerificationError.Reason.allCases.map(\.outcome)),
                       ["invalid_signature", "wrong_bundle", "wrong_environment"])
    }
}

extension SimSigningChain {
    static func jsonForTests(_ payload: JWSTransactionPayload) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return [UInt8](try! encoder.encode(payload))
    }
}

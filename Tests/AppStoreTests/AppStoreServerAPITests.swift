import AppStore
import AppleSim
import Foundation
import HTTP
import StoreKitCrypto
import XCTest

final class AppStoreServerAPITests: XCTestCase {
    // MARK: JWT

    func testJWTHeaderClaimsAndSignature() throws {
        let key = try ES256PrivateKey.generate()
        let issued = Date(timeIntervalSince1970: 1_763_700_000)
        let token = try AppStoreJWT.make(issuerID: "issuer-1", keyID: "KEY123", bundleID: JWSFixtures.bundleID, key: key,
                                         issuedAt: issued, lifetime: 600)
        let jws = try JWSCompact.parse(token)
        XCTAssertEqual(jws.header, JWSHeader(alg: "ES256", kid: "KEY123", typ: "JWT"))
        let claims = try AppStoreJWT.verify(token, publicKey: key.publicKey, now: issued.addingTimeInterval(10),
                                            expectedKeyID: "KEY123", expectedIssuer: "issuer-1", expectedBundleID: JWSFixtures.bundleID)
        XCTAssertEqual(claims, AppStoreJWTClaims(iss: "issuer-1", iat: 1_763_700_000, exp: 1_763_700_600, bid: JWSFixtures.bundleID))

        let capped = try AppStoreJWT.make(issuerID: "i", keyID: "k", bundleID: "b", key: key, issuedAt: issued, lifetime: 86_400)
        let cappedClaims = try AppStoreJWT.verify(capped, publicKey: key.publicKey, now: issued)
        XCTAssertEqual(cappedClaims.exp - cappedClaims.iat, 3600)

        func failure(_ token: String, key verifying: ES256PublicKey, now: Date = issued, kid: String? = nil) -> String? {
            do {
                _ = try AppStoreJWT.verify(token, publicKey: verifying, now: now, expectedKeyID: kid)
                return nil
            } catch {
                return error.reason
            }
        }
        XCTAssertEqual(failure(token, key: try ES256PrivateKey.generate().publicKey), "signature does not verify")
        XCTAssertEqual(failure(token, key: try key.publicKey, now: issued.addingTimeInterval(700)), "token expired")
        XCTAssertEqual(failure(token, key: try key.publicKey, now: issued.addingTimeInterval(-600)), "iat is in the future")
        XCTAssertEqual(failure(token, key: try key.publicKey, kid: "OTHER"), "unknown kid")
        let tooLong = try JWSCompact.sign(header: JWSHeader(alg: "ES256", kid: "k", typ: "JWT"),
                                          payload: JWSFixtures.json(["iss": "i", "iat": 1_763_700_000, "exp": 1_763_707_201,
                                                                     "aud": "appstoreconnect-v1", "bid": "b"]), key: key)
        XCTAssertEqual(failure(tooLong, key: try key.publicKey), "exp must be after iat and at most 60 minutes later")
        let wrongAudience = try JWSCompact.sign(header: JWSHeader(alg: "ES256", kid: "k", typ: "JWT"),
                                                payload: JWSFixtures.json(["iss": "i", "iat": 1_763_700_000, "exp": 1_763_700_300,
                                                                           "aud": "other", "bid": "b"]), key: key)
        XCTAssertEqual(failure(wrongAudience, key: try key.publicKey), "aud is not appstoreconnect-v1")
    }

    // MARK: client against the simulator

    private func client(_ h: SimHarness, key: ES256PrivateKey? = nil, observer: AppleRequestObserver = NoAppleRequestObserver()) throws -> AppStoreServerAPIClient {
        try AppStoreServerAPIClient(
            configuration: AppStoreServerAPIConfiguration(
                productionURL: h.sim.baseURL, sandboxURL: h.sim.baseURL.appendingPathComponent("sandbox"),
                issuerID: SimServerAPI.defaultIssuerID, keyID: SimServerAPI.defaultKeyID, bundleID: JWSFixtures.bundleID,
                privateKey: key ?? h.sim.serverAPI.apiPrivateKey, requestTimeout: .seconds(5)),
            transport: h.transport, observer: observer)
    }

    private func simVerifier(_ h: SimHarness) -> StoreKitSignedDataVerifier {
        try! StoreKitSignedDataVerifier(configuration: .init(bundleID: JWSFixtures.bundleID, allowSandbox: true),
                                        trustedRoots: [h.sim.serverAPI.signingChain.root])
    }

    func testProductionTransactionIsFoundAndVerifies() async throws {
        let h = try SimHarness.start()
        let observer = RecordingObserver()
        _ = try h.sim.serverAPI.mintTransaction(JWSFixtures.transaction("2000000000000001", signedDate: nil))
        let result = try await client(h, observer: observer).getTransactionInfo(transactionID: "2000000000000001")
        guard case .found(let jws, let endpoint) = result else { return XCTFail("\(result)") }
        XCTAssertEqual(endpoint, .production)
        let verified = try simVerifier(h).verifyTransaction(jws)
        XCTAssertEqual(verified.transaction.transactionID, "2000000000000001")
        XCTAssertEqual(verified.environment, .production)
        XCTAssertEqual(observer.requests, ["server_api_production:ok"])
        await h.stop()
    }

    func testSandboxFallbackOn4040010AndNotFound() async throws {
        let h = try SimHarness.start()
        _ = try h.sim.serverAPI.mintTransaction(JWSFixtures.transaction("3000000000000001", environment: "Sandbox", signedDate: nil))
        let observer = RecordingObserver()
        let api = try client(h, observer: observer)
        let result = await api.getTransactionInfo(transactionID: "3000000000000001")
        guard case .found(let jws, .sandbox) = result else { return XCTFail("\(result)") }
        XCTAssertEqual(try simVerifier(h).verifyTransaction(jws).environment, .sandbox)
        XCTAssertEqual(observer.requests, ["server_api_production:error_4040010", "server_api_sandbox:ok"])

        let missing = await api.getTransactionInfo(transactionID: "999")
        guard case .notFound = missing else { return XCTFail("\(missing)") }
        XCTAssertEqual(h.sim.serverAPI.requestCounts, ["Production:404": 2, "Sandbox:200": 1, "Sandbox:404": 1])
        await h.stop()
    }

    func testRateLimitHonoursRetryAfterAndWrongKeyIsAConfigError() async throws {
        let h = try SimHarness.start()
        _ = try h.sim.serverAPI.mintTransaction(JWSFixtures.transaction("4000000000000001", signedDate: nil))
        // Apple's Retry-After is an epoch-milliseconds instant; one far away is capped at an hour.
        h.sim.serverAPI.rateLimitNext(1, retryAfterMilliseconds: 4_102_444_800_000)
        let api = try client(h)
        let limited = await api.getTransactionInfo(transactionID: "4000000000000001")
        XCTAssertEqual(limited, .retry(reason: "rate_limited", status: 4290000, retryAfter: .seconds(3600)))
        guard case .found = await api.getTransactionInfo(transactionID: "4000000000000001") else { return XCTFail() }

        let stranger = try client(h, key: ES256PrivateKey.generate())
        guard case .configError(401, _) = await stranger.getTransactionInfo(transactionID: "4000000000000001") else { return XCTFail() }
        await h.stop()
    }

    func testSimulatorControlRoutesMintVerifiableJWS() async throws {
        let h = try SimHarness.start()
        let rootRequest = HTTPClientRequest(url: h.sim.baseURL.appendingPathComponent("sim/storekit/root.pem"))
        let rootPEM = String(decoding: try await h.transport.send(rootRequest, timeout: .seconds(5)).body, as: UTF8.self)
        let verifier = try StoreKitSignedDataVerifier(
            configuration: .init(bundleID: JWSFixtures.bundleID, appAppleID: JWSFixtures.appAppleID),
            trustedRoots: X509Certificate.certificates(pem: rootPEM))

        let (status, minted) = try await h.call("POST", "sim/storekit/transactions",
                                                json: #"{"transactionId":"5000000000000001","productId":"coins_100","bundleId":"\#(JWSFixtures.bundleID)","environment":"Production","quantity":3}"#)
        XCTAssertEqual(status, 200)
        let transaction = try verifier.verifyTransaction(try XCTUnwrap(minted["signedTransactionInfo"] as? String))
        XCTAssertEqual(transaction.transaction.quantity, 3)
        guard case .found = try await client(h).getTransactionInfo(transactionID: "5000000000000001") else { return XCTFail() }

        let (_, notification) = try await h.call("POST", "sim/storekit/notifications", json: """
            {"notificationType":"REFUND","notificationUUID":"n-1","bundleId":"\(JWSFixtures.bundleID)","appAppleId":\(JWSFixtures.appAppleID),
             "transaction":{"transactionId":"5000000000000001","productId":"coins_100","bundleId":"\(JWSFixtures.bundleID)",
                            "environment":"Production","revocationDate":1763700000000,"revocationReason":0}}
            """)
        let verified = try verifier.verifyNotification(try XCTUnwrap(notification["signedPayload"] as? String))
        XCTAssertEqual(verified.payload.notificationType, "REFUND")
        XCTAssertEqual(verified.transaction?.transaction.isRevoked, true)
        XCTAssertEqual(verified.transaction?.transaction.revocationReason, "0")
        await h.stop()
    }

    // MARK: classification

    private func scripted(_ response: HTTPClientResponse, sandbox: HTTPClientResponse? = nil) throws -> (AppStoreServerAPIClient, ScriptedTransport) {
        let transport = ScriptedTransport.byEndpoint(production: response, sandbox: sandbox)
        let api = try AppStoreServerAPIClient(
            configuration: AppStoreServerAPIConfiguration(
                productionURL: URL(string: "http://127.0.0.1:9")!, sandboxURL: URL(string: "http://127.0.0.1:9/sandbox")!,
                issuerID: "issuer", keyID: "KEY", bundleID: JWSFixtures.bundleID, privateKey: ES256PrivateKey.generate()),
            transport: transport)
        return (api, transport)
    }

    private func error(_ code: Int, status: Int, headers: HTTPHeaderFields = []) -> HTTPClientResponse {
        Fixtures.json(["errorCode": code, "errorMessage": "x"], status: status, headers: headers)
    }

    func testErrorClassification() async throws {
        let cases: [(HTTPClientResponse, AppStoreServerAPIResult)] = [
            (error(4040002, status: 404), .retry(reason: "api_4040002", status: 4040002, retryAfter: nil)),
            (error(4040004, status: 404), .retry(reason: "api_4040004", status: 4040004, retryAfter: nil)),
            (error(4040006, status: 404), .retry(reason: "api_4040006", status: 4040006, retryAfter: nil)),
            (error(5000001, status: 500), .retry(reason: "api_5000001", status: 5000001, retryAfter: nil)),
            (error(5000000, status: 500), .retry(reason: "http_500", status: 5000000, retryAfter: nil)),
            (HTTPClientResponse(status: 503, headers: [("Retry-After", "7")]), .retry(reason: "http_503", status: 503, retryAfter: .seconds(7))),
            (error(4290000, status: 429, headers: [("Retry-After", "2")]), .retry(reason: "rate_limited", status: 4290000, retryAfter: .seconds(2))),
            (error(4000006, status: 400), .rejected(reason: "invalid_transaction_id", status: 4000006, detail: "App Store Server API answered HTTP 400 error 4000006")),
            (HTTPClientResponse(status: 200, body: Array("{}".utf8)), .retry(reason: "malformed_response", status: 200, retryAfter: nil)),
        ]
        for (response, expected) in cases {
            let (api, transport) = try scripted(response)
            let result = await api.getTransactionInfo(transactionID: "1")
            XCTAssertEqual(result, expected)
            XCTAssertEqual(transport.requests.count, 1)
        }
        let (api, transport) = try scripted(HTTPClientResponse(status: 401))
        guard case .configError(401, let detail) = await api.getTransactionInfo(transactionID: "1") else { return XCTFail() }
        XCTAssertFalse(detail.contains("Bearer"))
        let request = try XCTUnwrap(transport.requests.first)
        XCTAssertEqual(request.url.path, "/inApps/v1/transactions/1")
        XCTAssertTrue(request.header("Authorization")?.hasPrefix("Bearer ey") == true)

        let (guarded, untouched) = try scripted(HTTPClientResponse(status: 200))
        for id in ["", "../admin", "1 2", String(repeating: "9", count: 65)] {
            guard case .rejected(reason: "invalid_transaction_id", _, _) = await guarded.getTransactionInfo(transactionID: id) else {
                return XCTFail(id)
            }
        }
        XCTAssertTrue(untouched.requests.isEmpty)
    }

    func testConfigurationValidation() throws {
        let key = try ES256PrivateKey.generate()
        var configuration = AppStoreServerAPIConfiguration(issuerID: "i", keyID: "k", bundleID: "b", privateKey: key)
        XCTAssertNoThrow(try configuration.validate())
        XCTAssertFalse("\(configuration)".contains("PRIVATE KEY"))
        configuration.productionURL = URL(string: "http://api.example.com")!
        XCTAssertThrowsError(try configuration.validate())
        configuration.productionURL = AppStoreServerAPIConfiguration.appleProductionURL
        configuration.tokenLifetime = 3601
        XCTAssertThrowsError(try configuration.validate())
        configuration.tokenLifetime = 300
        configuration.keyID = " "
        XCTAssertThrowsError(try configuration.validate()) { error in
            XCTAssertEqual("\(error)", "APPSTORE_KEY_ID is required for the App Store Server API")
        }
    }
}

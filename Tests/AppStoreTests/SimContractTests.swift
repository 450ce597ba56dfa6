import AppStore
import AppleSim
import Foundation
import HTTP
import StoreKitCrypto
import XCTest

/// apple-sim refuses what Apple refuses: the test walks the table of Apple's error codes
/// apple-sim answers, provokes each one, and checks the HTTP status, `errorCode` and `errorMessage`;
/// then every way a bearer token can be wrong, each a 401 with no body.
final class SimContractTests: XCTestCase {
    private struct Call {
        var method = "POST"
        var path = "inApps/v1/notifications/history"
        var query: String?
        var body = ""
        var token: String?
    }

    private func send(_ h: SimHarness, _ call: Call) async throws -> HTTPClientResponse {
        var url = h.sim.baseURL.appendingPathComponent(call.path)
        if let query = call.query { url = URL(string: url.absoluteString + "?" + query)! }
        let token = try call.token ?? AppStoreJWT.make(issuerID: SimServerAPI.defaultIssuerID, keyID: SimServerAPI.defaultKeyID,
                                                       bundleID: JWSFixtures.bundleID, key: h.sim.serverAPI.apiPrivateKey)
        let request = HTTPClientRequest(method: call.method, url: url,
                                        headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")],
                                        body: Array(call.body.utf8))
        return try await h.transport.send(request, timeout: .seconds(5))
    }

    private func ms(_ date: Date) -> Int64 { AppleTimestamp.start(date) }

    private func history(start: String, end: String, extra: String = "") -> Call {
        Call(body: #"{"startDate":\#(start),"endDate":\#(end)\#(extra)}"#)
    }

    private func consumption(_ fields: String) -> Call {
        Call(method: "PUT", path: "inApps/v2/transactions/consumption/8000000000000001", body: "{\(fields)}")
    }

    private static let goodConsumption = #""customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":false"#

    func testEveryErrorOfAppleTableIsAnsweredAsAppleAnswersIt() async throws {
        let h = try SimHarness.start()
        h.sim.serverAPI.register(JWSFixtures.transaction("8000000000000001", signedDate: nil))
        for i in 0..<21 {
            h.sim.serverAPI.recordNotification("payload-\(i)", sentAt: Date().addingTimeInterval(-600 + Double(i)), delivered: false)
        }
        let now = Date(), start = "\(ms(now.addingTimeInterval(-3600)))", end = "\(ms(now))"
        // A token minted for one body, to be used with another.
        let firstPage = try await send(h, history(start: start, end: end, extra: #","onlyFailures":true"#))
        let token = try XCTUnwrap((try JSONSerialization.jsonObject(with: Data(firstPage.body)) as? [String: Any])?["paginationToken"] as? String)
        let tokenQuery = "paginationToken=" + token.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!

        let provocations: [Int: [Call]] = [
            SimAPIError.generalBadRequest.code: [
                Call(body: "not json"),
                history(start: start, end: end, extra: #","onlyFailures":"true""#),
                history(start: start, end: end, extra: #","futureField":1"#),
                Call(method: "GET", path: "inApps/v1/transactions/8000000000000001", query: "extra=1"),
                consumption(Self.goodConsumption + #","consumptionPercentage":100001"#),
                consumption(Self.goodConsumption + #","consumptionPercentage":50000.5"#),
                consumption(#""customerConsented":true,"deliveryStatus":"UNDELIVERED_OTHER","sampleContentProvided":false,"consumptionPercentage":5"#),
            ],
            SimAPIError.invalidTransactionID.code: [Call(method: "GET", path: "inApps/v1/transactions/80.01")],
            SimAPIError.startDateTooFarInPast.code: [
                history(start: "\(ms(now.addingTimeInterval(-181 * 86_400)))", end: end),
                Call(path: "sandbox/inApps/v1/notifications/history",
                     body: #"{"startDate":\#(ms(now.addingTimeInterval(-31 * 86_400))),"endDate":\#(end)}"#),  // the sandbox keeps 30 days
            ],
            SimAPIError.startDateAfterEndDate.code: [history(start: end, end: end), history(start: end, end: start)],
            SimAPIError.invalidPaginationToken.code: [
                Call(query: tokenQuery, body: #"{"startDate":\#(start),"endDate":\#(end),"onlyFailures":false}"#),
                Call(query: "paginationToken=bm90LWEtdG9rZW4", body: #"{"startDate":\#(start),"endDate":\#(end)}"#),
            ],
            SimAPIError.invalidStartDate.code: [
                history(start: "1795349999300.5122", end: "1795609199300.5122"),  // a span as `--since 72h` computes it
                history(start: "\"\(start)\"", end: end), history(start: "-1", end: end), history(start: "1e12", end: end),
                Call(body: #"{"endDate":\#(end)}"#),
            ],
            SimAPIError.invalidEndDate.code: [history(start: start, end: "\(end).5"), history(start: start, end: "null")],
            SimAPIError.invalidNotificationType.code: [
                history(start: start, end: end, extra: #","notificationType":7"#),
                history(start: start, end: end, extra: #","notificationSubtype":"VOLUNTARY""#),
            ],
            SimAPIError.multipleFiltersSupplied.code: [
                history(start: start, end: end, extra: #","notificationType":"REFUND","transactionId":"8000000000000001""#),
            ],
            SimAPIError.invalidCustomerConsented.code: [
                consumption(#""customerConsented":false,"deliveryStatus":"DELIVERED","sampleContentProvided":false"#),
                consumption(#""deliveryStatus":"DELIVERED","sampleContentProvided":false"#),
            ],
            SimAPIError.invalidDeliveryStatus.code: [consumption(#""customerConsented":true,"deliveryStatus":"LOST","sampleContentProvided":false"#)],
            SimAPIError.invalidSampleContentProvided.code: [
                consumption(#""customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":0"#),
            ],
            SimAPIError.invalidRefundPreference.code: [consumption(Self.goodConsumption + #","refundPreference":"MAYBE""#)],
            SimAPIError.transactionIDNotFound.code: [Call(method: "GET", path: "inApps/v1/transactions/8000000000000999")],
            SimAPIError.rateLimitExceeded.code: [Call(method: "GET", path: "inApps/v1/lookup/NOFAULT01")],
            SimAPIError.generalInternalRetryable.code: [Call(method: "GET", path: "inApps/v1/lookup/NOFAULT02")],
        ]
        for entry in SimAPIError.table {
            let calls = try XCTUnwrap(provocations[entry.code], "no provocation for \(entry.name)")
            for call in calls {
                if entry == .rateLimitExceeded { h.sim.serverAPI.rateLimitNext(1, retryAfterMilliseconds: ms(Date()) + 1000) }
                if entry == .generalInternalRetryable { h.sim.serverAPI.inject(SimAPIFault(status: 500)) }
                let response = try await send(h, call)
                let body = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
                XCTAssertEqual(response.status, entry.status, "\(entry.name): \(call)")
                XCTAssertEqual(body?["errorCode"] as? Int, entry.code, "\(entry.name): \(call)")
                XCTAssertEqual(body?["errorMessage"] as? String, entry.message, "\(entry.name): \(call)")
            }
        }
        // What is well formed passes: integer dates, documented fields, nulls for absent optionals.
        let accepted = try await send(h, history(start: start, end: end, extra: #","onlyFailures":true,"notificationSubtype":null"#))
        XCTAssertEqual(accepted.status, 200)
        let consumed = try await send(h, consumption(Self.goodConsumption + #","consumptionPercentage":100000,"refundPreference":"GRANT_PRORATED""#))
        XCTAssertEqual(consumed.status, 202)
        await h.stop()
    }

    func testEveryWrongTokenIs401WithNoBody() async throws {
        let h = try SimHarness.start()
        let key = h.sim.serverAPI.apiPrivateKey
        h.sim.serverAPI.trustAPIKey(try key.publicKey, keyID: SimServerAPI.defaultKeyID, issuerID: SimServerAPI.defaultIssuerID,
                                    bundleID: JWSFixtures.bundleID)
        func token(key: ES256PrivateKey = key, kid: String = SimServerAPI.defaultKeyID, iss: String = SimServerAPI.defaultIssuerID,
                   aud: String = AppStoreJWT.audience, bid: String = JWSFixtures.bundleID, iat: Date = Date(), lifetime: Int64 = 300) throws -> String {
            let issued = Int64(iat.timeIntervalSince1970)
            let claims = AppStoreJWTClaims(iss: iss, iat: issued, exp: issued + lifetime, aud: aud, bid: bid)
            return try JWSCompact.sign(header: JWSHeader(alg: "ES256", kid: kid, typ: "JWT"), payload: Array(try JSONEncoder().encode(claims)), key: key)
        }
        let wrong: [String: String] = [
            "expired": try token(iat: Date().addingTimeInterval(-1200)),
            "from the future": try token(iat: Date().addingTimeInterval(600)),
            "wrong aud": try token(aud: "appstoreconnect-v2"),
            "wrong bid": try token(bid: "com.example.other"),
            "wrong iss": try token(iss: "00000000-0000-0000-0000-000000000000"),
            "wrong kid": try token(kid: "OTHERKEY01"),
            "wrong key": try token(key: try ES256PrivateKey.generate()),
            "lifetime over an hour": try token(lifetime: 3601),
            "not a JWT": "not.a.token",
        ]
        for (what, bad) in wrong.sorted(by: { $0.key < $1.key }) {
            for path in ["inApps/v1/transactions/1", "inApps/v1/lookup/MK5TTTVWJH"] {
                let response = try await send(h, Call(method: "GET", path: path, token: bad))
                XCTAssertEqual(response.status, 401, "\(what) on \(path)")
                XCTAssertTrue(response.body.isEmpty, "\(what): Apple's 401 has no body")
            }
        }
        let good = try await send(h, Call(method: "GET", path: "inApps/v1/lookup/MK5TTTVWJH", token: try token()))
        XCTAssertEqual(good.status, 200)
        await h.stop()
    }
}

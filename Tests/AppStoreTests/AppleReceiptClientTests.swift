import AppStore
import Foundation
import HTTP
import XCTest

final class AppleReceiptClientTests: XCTestCase {
    private func client(_ transport: HTTPTransport, secret: String? = nil, allowSandbox: Bool = false,
                        observer: AppleRequestObserver = NoAppleRequestObserver()) throws -> AppleReceiptClient {
        try AppleReceiptClient(configuration: Fixtures.configuration(secret: secret, allowSandbox: allowSandbox),
                               transport: transport, observer: observer)
    }

    private func verify(_ response: HTTPClientResponse, attempt: Int = 1, maxAttempts: Int = 5) async throws -> ReceiptVerdict {
        try await client(ScriptedTransport.byEndpoint(production: response))
            .verify(receiptData: "cmVjZWlwdA==", attempt: attempt, maxAttempts: maxAttempts)
    }

    func testStatusZeroWithStringValuesBecomesTransactions() async throws {
        let token = "6F1C2B4E-8A4D-4C1B-9B0A-2C7D5E3F1A90"
        let verdict = try await verify(Fixtures.receipt(inApp: [
            Fixtures.entry("2000000001", quantity: "3", extra: ["app_account_token": token, "original_transaction_id": "2000000000"]),
        ]))
        let t = try XCTUnwrap(verdict.receipt?.transactions.first)
        XCTAssertEqual(t.transactionID, "2000000001")
        XCTAssertEqual(t.originalTransactionID, "2000000000")
        XCTAssertEqual(t.productID, "coins_100")
        XCTAssertEqual(t.quantity, 3)
        XCTAssertEqual(t.purchaseDate, Date(timeIntervalSince1970: 1_763_700_000))
        XCTAssertEqual(t.appAccountToken, UUID(uuidString: token))
        XCTAssertEqual(t.environment, .production)
        XCTAssertFalse(t.isRevoked)
        XCTAssertEqual(verdict.receipt?.bundleID, Fixtures.bundleID)
    }

    func testNumbersAndNumericStatusStringsAreAcceptedAndUnknownFieldsIgnored() async throws {
        let verdict = try await verify(Fixtures.receipt(status: "0", inApp: [
            ["transaction_id": 3000000001, "product_id": "gems", "quantity": 2, "purchase_date_ms": 1763700000000,
             "in_app_ownership_type": "PURCHASED", "whatever": ["nested": true]],
        ], extra: ["pending_renewal_info": [], "latest_receipt": "xyz"]))
        let t = try XCTUnwrap(verdict.receipt?.transactions.first)
        XCTAssertEqual(t.transactionID, "3000000001")
        XCTAssertEqual(t.originalTransactionID, "3000000001")
        XCTAssertEqual(t.quantity, 2)
        XCTAssertEqual(t.purchaseDate, Date(timeIntervalSince1970: 1_763_700_000))
    }

    func testNullsAndPaddedValuesReadLikeAbsentAndTrimmed() async throws {
        let verdict = try await verify(Fixtures.receipt(status: " 0 ", inApp: [
            ["transaction_id": " 3000000002 ", "product_id": "gems", "quantity": NSNull(), "purchase_date_ms": NSNull(),
             "purchase_date": " 2025-11-21 04:40:00 Etc/GMT ", "cancellation_date": NSNull(), "app_account_token": NSNull()],
        ]))
        let t = try XCTUnwrap(verdict.receipt?.transactions.first)
        XCTAssertEqual(t.transactionID, "3000000002")
        XCTAssertEqual(t.quantity, 1)
        XCTAssertEqual(t.purchaseDate, Date(timeIntervalSince1970: 1_763_700_000))
        XCTAssertNil(t.appAccountToken)
        XCTAssertFalse(t.isRevoked)
    }

    func testEveryStatusClass() async throws {
        let expectations: [(Int, String)] = [
            (21000, "rejected:invalid_receipt"), (21003, "rejected:invalid_receipt"), (21010, "rejected:invalid_receipt"),
            (21004, "config"), (21002, "retry:status_21002"), (21005, "retry:status_21005"),
            (21009, "retry:status_21009"), (21100, "retry:status_211xx"), (21199, "retry:status_211xx"),
            (21008, "retry:status_unknown"),  // from production it makes no sense: try again
            (12345, "retry:status_unknown"),
        ]
        for (status, expected) in expectations {
            let verdict = try await verify(Fixtures.status(status))
            XCTAssertEqual(verdict.label, expected, "status \(status)")
            switch verdict {
            case .retry(_, let s, _), .rejected(_, let s, _): XCTAssertEqual(s, status)
            case .configError(let s, _): XCTAssertEqual(s, status)
            case .verified: XCTFail("status \(status) verified")
            }
        }
    }

    func testBothRetryableSpellingsOverrideAPermanentStatus() async throws {
        for key in ["is_retryable", "is-retryable"] {
            for value: Any in [true, "true", 1] {
                let verdict = try await verify(Fixtures.status(21003, extra: [key: value]))
                XCTAssertEqual(verdict.label, "retry:apple_retryable", "\(key)=\(value)")
            }
            let notRetryable = try await verify(Fixtures.status(21003, extra: [key: false]))
            XCTAssertEqual(notRetryable.label, "rejected:invalid_receipt")
        }
    }

    func testStatus21002BecomesInvalidReceiptAtTheLastAttempt() async throws {
        let early = try await verify(Fixtures.status(21002), attempt: 4, maxAttempts: 5)
        XCTAssertEqual(early.label, "retry:status_21002")
        let last = try await verify(Fixtures.status(21002), attempt: 5, maxAttempts: 5)
        XCTAssertEqual(last.label, "rejected:invalid_receipt")
    }

    func testSandboxReceiptGoesToSandboxOnlyWhenAllowed() async throws {
        let transport = ScriptedTransport.byEndpoint(production: Fixtures.status(21007),
                                                     sandbox: Fixtures.receipt(environment: "Sandbox"))
        let refused = try await client(transport).verify(receiptData: "cg==", attempt: 1, maxAttempts: 5)
        XCTAssertEqual(refused.label, "rejected:sandbox_rejected")
        XCTAssertEqual(transport.requests.count, 1, "never asks the sandbox when sandbox is not allowed")

        let allowed = try await client(transport, allowSandbox: true).verify(receiptData: "cg==", attempt: 1, maxAttempts: 5)
        XCTAssertEqual(allowed.receipt?.environment, .sandbox)
        XCTAssertEqual(allowed.receipt?.transactions.first?.environment, .sandbox)
        XCTAssertEqual(transport.requests.map(\.url), [Fixtures.productionURL, Fixtures.productionURL, Fixtures.sandboxURL])
    }

    func testProductionAnswerLabelledSandboxIsRejectedWhenSandboxIsNotAllowed() async throws {
        let verdict = try await verify(Fixtures.receipt(environment: "Sandbox"))
        XCTAssertEqual(verdict.label, "rejected:sandbox_rejected")
    }

    func testProductionReceiptSentToSandboxIsInvalid() async throws {
        let transport = ScriptedTransport.byEndpoint(production: Fixtures.status(21007), sandbox: Fixtures.status(21008))
        let verdict = try await client(transport, allowSandbox: true).verify(receiptData: "cg==", attempt: 1, maxAttempts: 5)
        XCTAssertEqual(verdict.label, "rejected:invalid_receipt")
    }

    func testWrongBundle() async throws {
        let verdict = try await verify(Fixtures.receipt(bundle: "com.attacker.other"))
        XCTAssertEqual(verdict.label, "rejected:wrong_bundle")
    }

    func testCancelledEntriesAreRevoked() async throws {
        let verdict = try await verify(Fixtures.receipt(inApp: [
            Fixtures.entry("4000000001"),
            Fixtures.entry("4000000002", extra: ["cancellation_date_ms": "1763800000000", "cancellation_reason": "1"]),
            Fixtures.entry("4000000003", extra: ["cancellation_date": "2025-11-22 08:26:40 Etc/GMT"]),
        ]))
        let byID = Dictionary(uniqueKeysWithValues: (verdict.receipt?.transactions ?? []).map { ($0.transactionID, $0) })
        XCTAssertEqual(byID["4000000001"]?.isRevoked, false)
        XCTAssertEqual(byID["4000000002"]?.isRevoked, true)
        XCTAssertEqual(byID["4000000002"]?.revocationDate, Date(timeIntervalSince1970: 1_763_800_000))
        XCTAssertEqual(byID["4000000002"]?.revocationReason, "1")
        XCTAssertEqual(byID["4000000003"]?.isRevoked, true)
        XCTAssertEqual(byID["4000000003"]?.revocationDate, Date(timeIntervalSince1970: 1_763_800_000))
    }

    func testEmptyInAppIsRetriedForThreeAttemptsThenNoPurchase() async throws {
        let empty = Fixtures.receipt(inApp: [])
        for attempt in 1...2 {
            let verdict = try await verify(empty, attempt: attempt, maxAttempts: 10)
            XCTAssertEqual(verdict.label, "retry:empty_in_app", "attempt \(attempt)")
        }
        let third = try await verify(empty, attempt: 3, maxAttempts: 10)
        XCTAssertEqual(third.label, "rejected:no_purchase")
        let shortRound = try await verify(empty, attempt: 2, maxAttempts: 2)
        XCTAssertEqual(shortRound.label, "rejected:no_purchase")
    }

    func testTransportFailuresAndHTTPErrorsAreRetried() async throws {
        let cases: [(Error?, HTTPClientResponse?, String)] = [
            (HTTPClientError.timeout, nil, "retry:timeout"),
            (HTTPClientError.connectionFailed("refused"), nil, "retry:connection_error"),
            (HTTPClientError.connectionReset, nil, "retry:connection_error"),
            (nil, HTTPClientResponse(status: 500), "retry:http_500"),
            (nil, HTTPClientResponse(status: 502), "retry:http_502"),
            (nil, HTTPClientResponse(status: 503), "retry:http_503"),
            (nil, HTTPClientResponse(status: 200, body: Array(#"{"status":0,"receipt":{"bundle_id""#.utf8)), "retry:malformed_response"),
            (nil, HTTPClientResponse(status: 200, body: Array("<html>maintenance</html>".utf8)), "retry:malformed_response"),
            (nil, HTTPClientResponse(status: 200, body: Array(#"{"status":0}"#.utf8)), "retry:malformed_response"),
            (nil, Fixtures.receipt(inApp: [["product_id": "coins"]]), "retry:malformed_response"),
        ]
        for (error, response, expected) in cases {
            let observer = RecordingObserver()
            let transport = ScriptedTransport { _ in
                if let error { throw error }
                return response!
            }
            let verdict = try await client(transport, observer: observer).verify(receiptData: "cg==", attempt: 1, maxAttempts: 5)
            XCTAssertEqual(verdict.label, expected)
            XCTAssertEqual(observer.requests.count, 1)
        }
    }

    func testRetryAfterIsHonouredOn429And503() async throws {
        for status in [429, 503] {
            let verdict = try await verify(HTTPClientResponse(status: status, headers: [("Retry-After", "120")]))
            guard case .retry(let reason, let code, let after) = verdict else { return XCTFail("\(verdict)") }
            XCTAssertEqual(reason, "http_\(status)")
            XCTAssertEqual(code, status)
            XCTAssertEqual(after, .seconds(120))
        }
        guard case .retry(_, _, let none) = try await verify(HTTPClientResponse(status: 500, headers: [("Retry-After", "120")])) else {
            return XCTFail("500 must retry")
        }
        XCTAssertNil(none)
    }

    func testObserverSeesEndpointsResultsAndDeprecationHeaders() async throws {
        let observer = RecordingObserver()
        var sandboxAnswer = Fixtures.receipt(environment: "Sandbox")
        sandboxAnswer.headers.append(("Deprecation", "true"))
        sandboxAnswer.headers.append(("Sunset", "Wed, 01 Jan 2031 00:00:00 GMT"))
        let transport = ScriptedTransport.byEndpoint(production: Fixtures.status(21007), sandbox: sandboxAnswer)
        let verdict = try await client(transport, allowSandbox: true, observer: observer)
            .verify(receiptData: "cg==", attempt: 1, maxAttempts: 5)
        XCTAssertEqual(verdict.label, "verified")
        XCTAssertEqual(observer.requests, ["production:status_21007", "sandbox:ok"])
        XCTAssertEqual(observer.notices, ["Deprecation=true", "Sunset=Wed, 01 Jan 2031 00:00:00 GMT"])
    }

    func testSharedSecretIsSentInTheBodyButNeverInVerdictTexts() async throws {
        let secret = "top-secret-shared-0123456789abcdef"
        let receiptData = "UkVDRUlQVC1QQVlMT0FELTEyMzQ1Njc4OTA="
        let responses: [HTTPClientResponse] = [
            Fixtures.status(21004), Fixtures.status(21003), Fixtures.status(21002), Fixtures.status(21007),
            HTTPClientResponse(status: 503), HTTPClientResponse(status: 200, body: Array("{".utf8)),
            Fixtures.receipt(bundle: "other"), Fixtures.receipt(inApp: []), Fixtures.receipt(),
        ]
        for response in responses {
            let transport = ScriptedTransport.byEndpoint(production: response)
            let verdict = try await client(transport, secret: secret)
                .verify(receiptData: receiptData, attempt: 5, maxAttempts: 5)
            let text = String(describing: verdict) + String(reflecting: verdict)
            XCTAssertFalse(text.contains(secret), text)
            XCTAssertFalse(text.contains(receiptData), text)

            let request = try XCTUnwrap(transport.requests.first)
            XCTAssertEqual(request.method, "POST")
            XCTAssertFalse(request.url.absoluteString.contains(secret))
            XCTAssertFalse(request.headers.contains { $0.value.contains(secret) })
            let body = try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any]
            XCTAssertEqual(body?["password"] as? String, secret)
            XCTAssertEqual(body?["receipt-data"] as? String, receiptData)
            XCTAssertEqual(body?["exclude-old-transactions"] as? Bool, false)
        }
        let wire = VerifyReceiptRequestBody(receiptData: receiptData, password: secret)
        XCTAssertFalse("\(wire)".contains(secret))
        XCTAssertFalse(String(reflecting: wire).contains(receiptData))
    }

    func testNoPasswordFieldWithoutASecret() async throws {
        let transport = ScriptedTransport.byEndpoint(production: Fixtures.receipt())
        _ = try await client(transport, secret: "").verify(receiptData: "cg==", attempt: 1, maxAttempts: 5)
        let body = try JSONSerialization.jsonObject(with: Data(transport.requests[0].body)) as? [String: Any]
        XCTAssertNil(body?["password"])
    }

    func testPlainHTTPToNonLoopbackHostsIsRefused() async throws {
        var config = Fixtures.configuration()
        config.productionURL = URL(string: "http://buy.itunes.apple.com/verifyReceipt")!
        XCTAssertThrowsError(try AppleReceiptClient(configuration: config)) { error in
            XCTAssertEqual(error as? ReceiptVerifierConfigurationError,
                           .insecureURL(setting: "APPLE_VERIFY_RECEIPT_URL", host: "buy.itunes.apple.com"))
        }
        XCTAssertNoThrow(try ReceiptVerifierConfiguration(bundleID: "b").validate(), "Apple's https defaults are fine")
        XCTAssertThrowsError(try ReceiptVerifierConfiguration(bundleID: " ").validate())
        XCTAssertEqual(ReceiptVerifierConfiguration(bundleID: "b").productionURL.absoluteString,
                       "https://buy.itunes.apple.com/verifyReceipt")
        XCTAssertEqual(ReceiptVerifierConfiguration(bundleID: "b").sandboxURL.absoluteString,
                       "https://sandbox.itunes.apple.com/verifyReceipt")
    }

    func testRejectionOutcomeRawValues() {
        XCTAssertEqual(RejectionOutcome.allCases.map(\.rawValue),
                       ["invalid_receipt", "wrong_bundle", "sandbox_rejected", "no_purchase"])
        XCTAssertEqual(AppleEnvironment.production.rawValue, "Production")
        XCTAssertEqual(AppleEnvironment.sandbox.rawValue, "Sandbox")
    }
}

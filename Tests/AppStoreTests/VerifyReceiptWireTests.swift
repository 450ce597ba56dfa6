import AppStore
import JSONWire
import XCTest

final class VerifyReceiptWireTests: XCTestCase {
    private func response(_ text: String) -> VerifyReceiptResponseBody? {
        (try? JSONValue.parse(Array(text.utf8))).flatMap(VerifyReceiptResponseBody.init(json:))
    }

    private func request(_ text: String) -> VerifyReceiptRequestBody? {
        (try? JSONValue.parse(Array(text.utf8))).flatMap(VerifyReceiptRequestBody.init(json:))
    }

    private func entry(_ members: String) -> VerifyReceiptInApp? {
        response(#"{"status":0,"receipt":{"in_app":[{\#(members)}]}}"#)?.receipt?.inApp.first
    }

    func testFullResponseRoundTrips() throws {
        let sold = VerifyReceiptInApp(quantity: "2", productID: "coins_100", transactionID: "t-1", originalTransactionID: "t-1",
                                      purchaseDate: "2025-11-21 04:40:00 Etc/GMT", purchaseDateMs: "1763700000000",
                                      appAccountToken: "6F1C2B4E-8A4D-4C1B-9B0A-2C7D5E3F1A90")
        let refunded = VerifyReceiptInApp(quantity: "1", productID: "gems \"x\" / ü", transactionID: "t-2",
                                          cancellationDate: "2025-11-22 08:26:40 Etc/GMT", cancellationDateMs: "1763800000000",
                                          cancellationReason: "1")
        let body = VerifyReceiptResponseBody(status: 0, environment: "Sandbox", isRetryable: false,
                                             receipt: VerifyReceiptReceipt(bundleID: "com.example", inApp: [sold, refunded]),
                                             latestReceiptInfo: [refunded])
        XCTAssertEqual(try VerifyReceiptResponseBody(json: JSONValue.parse(body.json)), body)
        let statusOnly = VerifyReceiptResponseBody(status: 21007, environment: "Production")
        XCTAssertEqual(String(decoding: statusOnly.json, as: UTF8.self), #"{"status":21007,"environment":"Production"}"#)
    }

    func testRequestRoundTripsAndNeedsAStringReceipt() throws {
        let body = VerifyReceiptRequestBody(receiptData: "ab+/cd==", password: "secret", excludeOldTransactions: true)
        XCTAssertEqual(try VerifyReceiptRequestBody(json: JSONValue.parse(body.json)), body)
        XCTAssertEqual(String(decoding: VerifyReceiptRequestBody(receiptData: "r").json, as: UTF8.self),
                       #"{"receipt-data":"r","exclude-old-transactions":false}"#)
        XCTAssertNil(request(#"{"receipt-data":12}"#))
        XCTAssertNil(request(#"{"password":"p"}"#))
        XCTAssertNil(request(#"["receipt-data"]"#))
        let lenient = try XCTUnwrap(request(#"{"receipt-data":"r","password":1234,"exclude-old-transactions":"1"}"#))
        XCTAssertEqual(lenient.password, "1234")
        XCTAssertTrue(lenient.excludeOldTransactions)
        XCTAssertEqual(request(#"{"receipt-data":"r","password":null,"exclude-old-transactions":[]}"#),
                       VerifyReceiptRequestBody(receiptData: "r"))
    }

    func testValuesAreReadAsTextWhateverTheirJSONType() {
        XCTAssertEqual(entry(#""quantity":"2""#)?.quantity, "2")
        XCTAssertEqual(entry(#""quantity":2"#)?.quantity, "2")
        XCTAssertEqual(entry(#""quantity":2.0"#)?.quantity, "2", "integral doubles as integers")
        XCTAssertEqual(entry(#""quantity":2e3"#)?.quantity, "2000")
        XCTAssertEqual(entry(#""quantity":2.5"#)?.quantity, "2.5")
        XCTAssertEqual(entry(#""quantity":-0"#)?.quantity, "0")
        XCTAssertEqual(entry(#""quantity":true"#)?.quantity, "true")
        XCTAssertEqual(entry(#""purchase_date_ms":1763700000000"#)?.purchaseDateMs, "1763700000000")
        for wrongShape in ["null", "[]", "[1]", "{}", #"{"a":1}"#] {
            let read = entry(#""quantity":\#(wrongShape),"product_id":"p""#)
            XCTAssertNil(read?.quantity, wrongShape)
            XCTAssertEqual(read?.productID, "p", "one odd field does not sink the entry")
        }
    }

    func testStatusIsRequiredButMayBeText() {
        XCTAssertEqual(response(#"{"status":21003}"#)?.status, 21003)
        XCTAssertEqual(response(#"{"status":" 21003 "}"#)?.status, 21003)
        XCTAssertEqual(response(#"{"status":0.0}"#)?.status, 0)
        for bad in [#"{}"#, #"{"status":null}"#, #"{"status":"ok"}"#, #"{"status":true}"#, #"{"status":1.5}"#, "[0]", "0"] {
            XCTAssertNil(response(bad), bad)
        }
    }

    func testBothRetryableSpellings() {
        XCTAssertEqual(response(#"{"status":21199,"is_retryable":true}"#)?.isRetryable, true)
        XCTAssertEqual(response(#"{"status":21199,"is-retryable":"1"}"#)?.isRetryable, true)
        XCTAssertEqual(response(#"{"status":21199,"is-retryable":0}"#)?.isRetryable, false)
        XCTAssertNil(response(#"{"status":21199,"is_retryable":"maybe"}"#)?.isRetryable)
    }

    func testAMalformedReceiptOrListNeverHidesTheStatus() throws {
        for receipt in [#""x""#, "[]", "null", #"{"in_app":"x"}"#, #"{"in_app":[1]}"#, #"{"in_app":[{"quantity":"1"},null]}"#] {
            let read = try XCTUnwrap(response(#"{"status":21010,"receipt":\#(receipt)}"#), receipt)
            XCTAssertEqual(read.status, 21010)
            XCTAssertNil(read.receipt, receipt)
        }
        for list in [#""x""#, "{}", "[1]", "null"] {
            let read = try XCTUnwrap(response(#"{"status":0,"latest_receipt_info":\#(list)}"#), list)
            XCTAssertNil(read.latestReceiptInfo, list)
        }
        let absentList = try XCTUnwrap(response(#"{"status":0,"receipt":{"bundle_id":"b","in_app":null}}"#))
        XCTAssertEqual(absentList.receipt, VerifyReceiptReceipt(bundleID: "b", inApp: []))
    }
}

import Foundation
@testable import Ingest
import XCTest

/// Pure request validation: every 400 message of the ingest API, without a server.
final class SubmissionValidationTests: XCTestCase {
    private func receiptError(_ body: String, file: StaticString = #filePath, line: UInt = #line) -> String? {
        do {
            _ = try ReceiptSubmission(json: Array(body.utf8))
            XCTFail("accepted: \(body)", file: file, line: line)
            return nil
        } catch {
            return (error as? IngestValidationError)?.message
        }
    }

    func testValidReceiptWithOptionalFields() throws {
        let receipt = try ReceiptSubmission(json: Array(#"{"user_id":"u1","order_id":"o1","product_id":"p1","receipt_data":"QUJD","extra":[1,{"a":null}]}"#.utf8))
        XCTAssertEqual(receipt, ReceiptSubmission(userID: "u1", orderID: "o1", productID: "p1", receiptData: "QUJD"))
    }

    func testNullEmptyAndAbsentOptionalFieldsMeanNotGiven() throws {
        for body in [#"{"user_id":"u","receipt_data":"QUJD"}"#,
                     #"{"user_id":"u","order_id":null,"product_id":null,"receipt_data":"QUJD"}"#,
                     #"{"user_id":"u","order_id":"","product_id":"","receipt_data":"QUJD"}"#] {
            let receipt = try ReceiptSubmission(json: Array(body.utf8))
            XCTAssertNil(receipt.orderID, body)
            XCTAssertNil(receipt.productID, body)
        }
    }

    func testMalformedAndNonObjectBodies() {
        XCTAssertEqual(receiptError(""), "malformed JSON: empty document")
        XCTAssertEqual(receiptError("   "), "malformed JSON: empty document")
        XCTAssertEqual(receiptError("{"), "malformed JSON: unexpected end of input")
        XCTAssertEqual(receiptError(#"{"user_id":"u",}"#), "malformed JSON: expected a member name at byte 16")
        XCTAssertEqual(receiptError(#"{"user_id":"u"} x"#), "malformed JSON: unexpected data after the value at byte 17")
        XCTAssertEqual(receiptError(#"{'user_id':1}"#), "malformed JSON: expected a member name at byte 2")
        XCTAssertEqual(receiptError(#"{"a":01}"#), "malformed JSON: leading zero in a number at byte 6")
        XCTAssertEqual(receiptError(#"{"a":tru}"#), "malformed JSON: invalid literal at byte 6")
        XCTAssertEqual(receiptError(#"{"a":"\x"}"#), "malformed JSON: invalid escape at byte 8")
        XCTAssertEqual(receiptError(#"{"a":"\ud800"}"#), "malformed JSON: lone high surrogate at byte 7")
        XCTAssertEqual(receiptError("{\"a\":\"\u{1}\"}"), "malformed JSON: control character in string at byte 7")
        XCTAssertEqual(receiptError(String(repeating: "[", count: 100)), "malformed JSON: nesting deeper than 64 levels at byte 65")
        XCTAssertEqual(receiptError("[1,2]"), "body must be a JSON object")
        XCTAssertEqual(receiptError(#""user_id""#), "body must be a JSON object")
        XCTAssertEqual(receiptError("null"), "body must be a JSON object")
        XCTAssertEqual(receiptError("nul"), "malformed JSON: invalid literal at byte 1")
    }

    func testInvalidUTF8IsMalformed() {
        var bytes = Array(#"{"user_id":"u"#.utf8)
        bytes.append(0xFF)
        bytes += Array(#"","receipt_data":"QUJD"}"#.utf8)
        XCTAssertThrowsError(try ReceiptSubmission(json: bytes)) { error in
            XCTAssertEqual((error as? IngestValidationError)?.message, "malformed JSON: invalid UTF-8 in string at byte 13")
        }
    }

    func testMissingEmptyAndWrongTypedFieldsAreNamed() {
        XCTAssertEqual(receiptError(#"{"receipt_data":"QUJD"}"#), "user_id is required")
        XCTAssertEqual(receiptError(#"{"user_id":"u"}"#), "receipt_data is required")
        XCTAssertEqual(receiptError(#"{"user_id":5,"receipt_data":"QUJD"}"#), "user_id must be a string")
        XCTAssertEqual(receiptError(#"{"user_id":true,"receipt_data":"QUJD"}"#), "user_id must be a string")
        XCTAssertEqual(receiptError(#"{"user_id":null,"receipt_data":"QUJD"}"#), "user_id must be a string")
        XCTAssertEqual(receiptError(#"{"user_id":["u"],"receipt_data":"QUJD"}"#), "user_id must be a string")
        XCTAssertEqual(receiptError(#"{"user_id":"","receipt_data":"QUJD"}"#), "user_id must not be empty")
        XCTAssertEqual(receiptError(#"{"user_id":"  ","receipt_data":"QUJD"}"#), "user_id must not be empty")
        XCTAssertEqual(receiptError(#"{"user_id":"u","order_id":42,"receipt_data":"QUJD"}"#), "order_id must be a string")
        XCTAssertEqual(receiptError(#"{"user_id":"u","product_id":{},"receipt_data":"QUJD"}"#), "product_id must be a string")
        XCTAssertEqual(receiptError(#"{"user_id":"u","receipt_data":1}"#), "receipt_data must be a string")
        XCTAssertEqual(receiptError(#"{"user_id":"u","receipt_data":""}"#), "receipt_data must not be empty")
        XCTAssertEqual(receiptError(#"{"user_id":"u\u0000","receipt_data":"QUJD"}"#), "user_id must not contain NUL characters")
    }

    func testIdentifierLengthLimitCountsCharactersNotBytes() throws {
        let longest = String(repeating: "ü", count: 256)  // 512 UTF-8 bytes, still allowed
        let receipt = try ReceiptSubmission(json: Array(#"{"user_id":"\#(longest)","receipt_data":"QUJD"}"#.utf8))
        XCTAssertEqual(receipt.userID, longest)
        XCTAssertEqual(receiptError(#"{"user_id":"\#(longest)x","receipt_data":"QUJD"}"#), "user_id must be at most 256 characters")
        XCTAssertEqual(receiptError(#"{"user_id":"u","order_id":"\#(String(repeating: "o", count: 257))","receipt_data":"QUJD"}"#),
                       "order_id must be at most 256 characters")
    }

    func testReceiptDataBase64Rules() throws {
        // iOS line breaks arrive JSON-escaped; they are stripped and the stripped form is kept.
        let wrapped = try ReceiptSubmission(json: Array(#"{"user_id":"u","receipt_data":"QUJD\r\nREVG\nR0g="}"#.utf8))
        XCTAssertEqual(wrapped.receiptData, "QUJDREVGR0g=")
        let escapedSlash = try ReceiptSubmission(json: Array(#"{"user_id":"u","receipt_data":"a\/b+"}"#.utf8))
        XCTAssertEqual(escapedSlash.receiptData, "a/b+")
        XCTAssertNoThrow(try ReceiptSubmission(json: Array(#"{"user_id":"u","receipt_data":"QQ=="}"#.utf8)))
        for bad in ["QUJ", "QUJD!", "QU JD", "Q===", "=QUJ", "QU=D", "QUJD-_==", "a\\tbc"] {
            XCTAssertEqual(receiptError(#"{"user_id":"u","receipt_data":"\#(bad)"}"#), "receipt_data must be base64", bad)
        }
        XCTAssertEqual(receiptError(#"{"user_id":"u","receipt_data":"\r\n"}"#), "receipt_data must not be empty")
    }

    func testEscapesAndMultibyteDecodeExactly() throws {
        let receipt = try ReceiptSubmission(json: Array(#"{"user_id":"\u00fcser \ud83d\ude00 \"q\" 日本","receipt_data":"QUJD"}"#.utf8))
        XCTAssertEqual(receipt.userID, "üser 😀 \"q\" 日本")
        let raw = try ReceiptSubmission(json: Array(#"{"user_id":"ユーザー😀","receipt_data":"QUJD"}"#.utf8))
        XCTAssertEqual(raw.userID, "ユーザー😀")
        // Duplicate keys: the last one wins.
        let dup = try ReceiptSubmission(json: Array(#"{"user_id":5,"user_id":"u2","receipt_data":"QUJD"}"#.utf8))
        XCTAssertEqual(dup.userID, "u2")
    }

    func testTransactionAndNotificationBodies() throws {
        let transaction = try TransactionSubmission(json: Array(#"{"user_id":"u","order_id":null,"signed_transaction":"a.b.c"}"#.utf8))
        XCTAssertEqual(transaction, TransactionSubmission(userID: "u", signedTransaction: "a.b.c"))
        XCTAssertThrowsError(try TransactionSubmission(json: Array(#"{"user_id":"u"}"#.utf8))) {
            XCTAssertEqual(($0 as? IngestValidationError)?.message, "signed_transaction is required")
        }
        XCTAssertThrowsError(try TransactionSubmission(json: Array(#"{"signed_transaction":"x"}"#.utf8))) {
            XCTAssertEqual(($0 as? IngestValidationError)?.message, "user_id is required")
        }
        let notification = try NotificationSubmission(json: Array(#"{"signedPayload":"x.y.z","other":{"nested":[true]}}"#.utf8))
        XCTAssertEqual(notification.signedPayload, "x.y.z")
        for (body, message) in [(#"{}"#, "signedPayload is required"), (#"{"signedPayload":""}"#, "signedPayload must not be empty"),
                                (#"{"signedPayload":7}"#, "signedPayload must be a string"), ("[]", "body must be a JSON object")] {
            XCTAssertThrowsError(try NotificationSubmission(json: Array(body.utf8))) {
                XCTAssertEqual(($0 as? IngestValidationError)?.message, message, body)
            }
        }
    }

    func testBearerTokenComparison() throws {
        let auth = try BearerTokenAuthenticator(token: "s3cret-token")
        XCTAssertTrue(auth.isAuthorized("Bearer s3cret-token"))
        XCTAssertTrue(auth.isAuthorized("bearer s3cret-token"))
        XCTAssertFalse(auth.isAuthorized(nil))
        XCTAssertFalse(auth.isAuthorized(""))
        XCTAssertFalse(auth.isAuthorized("Bearer "))
        XCTAssertFalse(auth.isAuthorized("Bearer s3cret-toke"))
        XCTAssertFalse(auth.isAuthorized("Bearer s3cret-tokenX"))
        XCTAssertFalse(auth.isAuthorized("Bearer S3cret-token"))
        XCTAssertFalse(auth.isAuthorized("Basic s3cret-token"))
        XCTAssertFalse(auth.isAuthorized("s3cret-token"))
        XCTAssertTrue(BearerTokenAuthenticator.constantTimeEquals([1, 2, 3], [1, 2, 3]))
        XCTAssertFalse(BearerTokenAuthenticator.constantTimeEquals([], [1]))
        XCTAssertFalse(BearerTokenAuthenticator.constantTimeEquals([1, 2], [1]))
        XCTAssertThrowsError(try BearerTokenAuthenticator(token: "")) {
            XCTAssertEqual($0 as? IngestConfigurationError, .emptyToken)
        }
    }

    func testJobStatusJSONShape() {
        let status = JobStatus(jobID: 7, state: "done", outcome: "credited", orderID: "o\"1", transactionIDs: ["1000", "1001"])
        XCTAssertEqual(String(decoding: status.json, as: UTF8.self),
                       #"{"job_id":7,"state":"done","outcome":"credited","order_id":"o\"1","transaction_ids":["1000","1001"]}"#)
        let queued = JobStatus(jobID: 8, state: "queued", outcome: nil, orderID: nil, transactionIDs: [])
        XCTAssertEqual(String(decoding: queued.json, as: UTF8.self),
                       #"{"job_id":8,"state":"queued","outcome":null,"order_id":null,"transaction_ids":[]}"#)
    }
}

import XCTest
@testable import Observability

final class RedactionTests: XCTestCase {
    func testRegisteredSecretIsCutOutOfLongerValues() {
        let sink = CapturingLogSink()
        let logger = Logger(sink: sink, redactor: Redactor(secrets: ["s3cr3t-shared", "abc", "", "tok_123456"]))
        logger.error("config_error", ["message": "bad secret s3cr3t-shared for url?x=s3cr3t-shared&t=tok_123456",
                                      "short": "abc is too short to redact"])
        XCTAssertEqual(sink.lines.count, 1)
        let line = sink.lines[0]
        XCTAssertFalse(line.contains("s3cr3t"))
        XCTAssertFalse(line.contains("tok_123456"))
        XCTAssertTrue(line.contains(#"message="bad secret [redacted] for url?x=[redacted]&t=[redacted]""#), line)
        XCTAssertTrue(line.contains(#"short="abc is too short to redact""#), line)
    }

    func testLongestSecretWinsWhenSecretsOverlap() {
        let redactor = Redactor(secrets: ["abcd", "abcdefgh"])
        XCTAssertEqual(redactor.redact("xabcdefghy abcdz"), "x[redacted]y [redacted]z")
        XCTAssertEqual(redactor.redact("nothing here"), "nothing here")
        XCTAssertEqual(redactor.redact("abcd"), "[redacted]")
        XCTAssertEqual(redactor.adding(secrets: ["zzzz"]).redact("zzzz abcd"), "[redacted] [redacted]")
    }

    func testNonASCIISecretsAndValues() {
        let redactor = Redactor(secrets: ["pässwörd"])
        XCTAssertEqual(redactor.redact("é pässwörd ü"), "é [redacted] ü")
    }

    func testSensitiveKeysAreAlwaysRedacted() {
        let sink = CapturingLogSink()
        let logger = Logger(format: .json, sink: sink).with(["token": "fixed-token"])
        logger.info("x", ["password": "p", "receipt_data": "MIIT", "receipt-data": "MIIT", "shared_secret": "s",
                          "authorization": "Bearer q", "signed_payload": "eyJ", "signedPayload": "eyJ",
                          "jwt": "eyJ", "private_key": "-----BEGIN", "Token": .int(12345), "safe": "visible"])
        let line = sink.lines[0]
        for leaked in ["fixed-token", "\"p\"", "MIIT", "Bearer", "eyJ", "BEGIN", "12345"] {
            XCTAssertFalse(line.contains(leaked), "\(leaked) leaked: \(line)")
        }
        XCTAssertEqual(line.components(separatedBy: "[redacted]").count - 1, 11)
        XCTAssertTrue(line.contains(#""safe":"visible""#))
    }
}

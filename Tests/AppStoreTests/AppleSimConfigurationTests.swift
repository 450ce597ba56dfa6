import AppStore
import AppleSim
import XCTest

final class AppleSimConfigurationTests: XCTestCase {
    func testParsesEveryFlag() throws {
        let config = try AppleSimConfiguration.parse(arguments: [
            "--listen", "127.0.0.1:8090", "--shared-secret", "s", "--seed=7", "--latency", "3s-6s",
            "--error-rate", "0.2", "--status-21005-rate", "0.1", "--retryable-rate", "0.1", "--hang-rate", "0.05",
            "--reset-rate", "0.05", "--malformed-rate", "0.1", "--outage", "5s:10s", "--sales-report-delay", "8h",
        ])
        XCTAssertEqual(config.salesReportDelay, 8 * 3600)
        XCTAssertEqual(try AppleSimConfiguration.parse(arguments: ["--sales-report-delay", "90s"]).salesReportDelay, 90)
        XCTAssertThrowsError(try AppleSimConfiguration.parse(arguments: ["--sales-report-delay", "soon"]))
        XCTAssertEqual(config.host, "127.0.0.1")
        XCTAssertEqual(config.port, 8090)
        XCTAssertEqual(config.sharedSecret, "s")
        XCTAssertEqual(config.seed, 7)
        XCTAssertEqual(config.faults.latency, SimLatency(min: .seconds(3), max: .seconds(6)))
        XCTAssertEqual(config.faults.errorRate, 0.2)
        XCTAssertEqual(config.faults.status21005Rate, 0.1)
        XCTAssertEqual(config.faults.hangRate, 0.05)
        XCTAssertEqual(config.faults.resetRate, 0.05)
        XCTAssertEqual(config.faults.malformedRate, 0.1)
        XCTAssertEqual(config.faults.outage, SimOutage(start: .seconds(5), duration: .seconds(10)))
        // The list the CLI shows is the list the parser knows, flag for flag.
        let exercised = ["listen", "shared-secret", "seed", "latency", "error-rate", "status-21005-rate", "retryable-rate",
                         "hang-rate", "reset-rate", "malformed-rate", "outage", "sales-report-delay"]
        XCTAssertEqual(AppleSimConfiguration.flags.map(\.name), exercised)
    }

    func testDefaultsAndDurationSpellings() throws {
        let config = try AppleSimConfiguration.parse(arguments: [])
        XCTAssertEqual(config.host, "127.0.0.1")
        XCTAssertEqual(config.port, 0)
        XCTAssertNil(config.faults.latency)
        XCTAssertEqual(SimLatency.parse("200ms"), SimLatency(.milliseconds(200)))
        XCTAssertEqual(SimLatency.parse("1.5s"), SimLatency(.milliseconds(1500)))
        XCTAssertEqual(SimLatency.parse("0.2"), SimLatency(.milliseconds(200)))
        XCTAssertEqual(SimLatency.parse("3s-6s")?.description, "3s-6s")
        XCTAssertNil(SimLatency.parse("fast"))
        XCTAssertNil(SimOutage.parse("5s"))
    }

    func testBadFlagsNameTheSettingAndNeverEchoTheSecret() {
        let cases: [([String], String)] = [
            (["--latency", "soon"], "--latency"), (["--error-rate", "1.5"], "--error-rate"),
            (["--outage", "5s"], "--outage"), (["--listen", "nowhere"], "--listen"), (["--seed", "-1"], "--seed"),
            (["--bogus", "1"], "--bogus"), (["--hang-rate"], "--hang-rate"),
            (["--error-rate", "0.7", "--reset-rate", "0.7"], "--faults"),
        ]
        for (arguments, prefix) in cases {
            XCTAssertThrowsError(try AppleSimConfiguration.parse(arguments: arguments)) { error in
                XCTAssertTrue("\(error)".hasPrefix(prefix), "\(arguments): \(error)")
            }
        }
        XCTAssertThrowsError(try AppleSimConfiguration.parse(arguments: ["--shared-secret", "hunter2", "--nope", "x"])) { error in
            XCTAssertFalse("\(error)".contains("hunter2"))
        }
    }

    func testSimReceiptRoundTripAndGarbage() throws {
        let receipt = SimReceipt(bundleID: "b", environment: .sandbox,
                                 transactions: [.init(transactionID: "1", productID: "p", quantity: 2)], forceStatus: 21010)
        XCTAssertEqual(SimReceipt.parse(base64: receipt.mint()), receipt)
        XCTAssertNil(SimReceipt.parse(base64: "not base64"))
        XCTAssertNil(SimReceipt.parse(base64: Data("{\"sim\":2}".utf8).base64EncodedString()))
        XCTAssertEqual(SimReceipt.parse(base64: " \n" + receipt.mint() + "\r\n\t"), receipt, "surrounding whitespace is trimmed")
        func parse(_ json: String) -> SimReceipt? { SimReceipt.parse(base64: Data(json.utf8).base64EncodedString()) }
        let minimal = #"{"sim":1,"bundle_id":"b","environment":"Sandbox","transactions":[{"transaction_id":"1","product_id":"p"#
        XCTAssertEqual(parse(minimal + #"","quantity":null}],"force_status":null}"#),
                       SimReceipt(bundleID: "b", environment: .sandbox, transactions: [.init(transactionID: "1", productID: "p", purchaseDateMs: nil)]),
                       "absent or null optional members")
        XCTAssertNil(parse(minimal + #"","quantity":"2"}]}"#), "a member of the wrong type rejects the receipt")
        XCTAssertNil(parse(#"{"sim":1,"bundle_id":"b","environment":"Staging","transactions":[]}"#), "an unknown environment too")
        XCTAssertNil(parse(#"{"sim":1,"bundle_id":"b","transactions":[]}"#), "a required member missing")
        let json = try XCTUnwrap(Data(base64Encoded: receipt.mint()).flatMap { String(data: $0, encoding: .utf8) })
        for key in ["\"sim\":1", "\"bundle_id\":\"b\"", "\"environment\":\"Sandbox\"", "\"force_status\":21010", "\"transaction_id\":\"1\""] {
            XCTAssertTrue(json.contains(key), key)
        }
    }
}

import AppStore
import AppleSim
import Foundation
import HTTP
import XCTest

final class AppleSimulatorTests: XCTestCase {
    func testPaidAndRefundedTransactionsAndStats() async throws {
        let h = try SimHarness.start()
        let receipt = SimReceipt(bundleID: Fixtures.bundleID, transactions: [
            .init(transactionID: "t-1", productID: "coins_100", quantity: 2, purchaseDateMs: 1_763_700_000_000,
                  appAccountToken: "6F1C2B4E-8A4D-4C1B-9B0A-2C7D5E3F1A90"),
            .init(transactionID: "t-2", productID: "coins_500", cancellationDateMs: 1_763_800_000_000, cancellationReason: "1"),
        ]).mint()
        let verdict = try await h.verify(receipt)
        let transactions = try XCTUnwrap(verdict.receipt?.transactions)
        XCTAssertEqual(transactions.map(\.transactionID), ["t-1", "t-2"])
        XCTAssertEqual(transactions[0].quantity, 2)
        XCTAssertEqual(transactions[0].purchaseDate, Date(timeIntervalSince1970: 1_763_700_000))
        XCTAssertEqual(transactions[0].appAccountToken, UUID(uuidString: "6F1C2B4E-8A4D-4C1B-9B0A-2C7D5E3F1A90"))
        XCTAssertFalse(transactions[0].isRevoked)
        XCTAssertTrue(transactions[1].isRevoked)
        XCTAssertEqual(transactions[1].revocationReason, "1")

        let (status, stats) = try await h.call("GET", "sim/stats")
        XCTAssertEqual(status, 200)
        XCTAssertEqual(stats["paid_transactions"] as? Int, 1)
        XCTAssertEqual(stats["paid_transaction_ids"] as? [String], ["t-1"])
        XCTAssertEqual(stats["revoked_transaction_ids"] as? [String], ["t-2"])
        XCTAssertEqual((stats["by_result"] as? [String: Int])?["ok"], 1)
        XCTAssertEqual(h.sim.stats.paid, ["t-1"])
        await h.stop()
    }

    func testInAppValuesAreStringsOnTheWire() async throws {
        let h = try SimHarness.start()
        let body = #"{"receipt-data":"\#(SimReceipts.paid("t-9"))"}"#
        let (_, json) = try await h.call("POST", "verifyReceipt", json: body)
        let entry = try XCTUnwrap(((json["receipt"] as? [String: Any])?["in_app"] as? [[String: Any]])?.first)
        for key in ["quantity", "purchase_date_ms", "purchase_date", "transaction_id", "original_transaction_id", "product_id"] {
            XCTAssertNotNil(entry[key] as? String, key)
        }
        XCTAssertEqual(json["status"] as? Int, 0)
        XCTAssertEqual(json["environment"] as? String, "Production")
        await h.stop()
    }

    func testSandboxAndProductionRouting() async throws {
        let h = try SimHarness.start()
        let sandboxReceipt = SimReceipts.paid("s-1", environment: .sandbox)
        let refused = try await h.verify(sandboxReceipt)
        XCTAssertEqual(refused.label, "rejected:sandbox_rejected")
        let allowed = try await h.verify(sandboxReceipt, allowSandbox: true)
        XCTAssertEqual(allowed.receipt?.environment, .sandbox)

        let (_, wrongPath) = try await h.call("POST", "sandbox/verifyReceipt", json: #"{"receipt-data":"\#(SimReceipts.paid("p-1"))"}"#)
        XCTAssertEqual(wrongPath["status"] as? Int, 21008)

        let stats = h.sim.stats
        XCTAssertEqual(stats.byResult["status_21007"], 2)
        XCTAssertEqual(stats.byResult["status_21008"], 1)
        XCTAssertEqual(stats.byEndpoint["sandbox"], 2)
        XCTAssertEqual(stats.paid, ["s-1"])
        await h.stop()
    }

    func testSharedSecret() async throws {
        let h = try SimHarness.start(arguments: ["--shared-secret", "right-secret"])
        let receipt = SimReceipts.paid("x-1")
        let missing = try await h.verify(receipt)
        XCTAssertEqual(missing.label, "config")
        let wrong = try await h.verify(receipt, secret: "wrong-secret")
        XCTAssertEqual(wrong.label, "config")
        if case .configError(let status, let detail) = wrong {
            XCTAssertEqual(status, 21004)
            XCTAssertFalse(detail.contains("secret-"))
        }
        let right = try await h.verify(receipt, secret: "right-secret")
        XCTAssertEqual(right.label, "verified")
        await h.stop()
    }

    func testForcedStatusesGarbageAndBadRequests() async throws {
        let h = try SimHarness.start()
        let expected: [(Int, String)] = [(21004, "config"), (21010, "rejected:invalid_receipt"),
                                         (21003, "rejected:invalid_receipt"), (21005, "retry:status_21005")]
        for (status, label) in expected {
            let verdict = try await h.verify(SimReceipts.paid("f-\(status)", forceStatus: status))
            XCTAssertEqual(verdict.label, label, "force_status \(status)")
        }
        let garbage = try await h.verify("bm90IGEgc2ltIHJlY2VpcHQ=", attempt: 1)
        XCTAssertEqual(garbage.label, "retry:status_21002")
        let garbageAtEnd = try await h.verify("%%% not base64 %%%", attempt: 5, maxAttempts: 5)
        XCTAssertEqual(garbageAtEnd.label, "rejected:invalid_receipt")
        let empty = try await h.verify(SimReceipts.paid(), attempt: 3, maxAttempts: 5)
        XCTAssertEqual(empty.label, "rejected:no_purchase")
        let (_, notJSON) = try await h.call("POST", "verifyReceipt", json: "receipt-data=abc")
        XCTAssertEqual(notJSON["status"] as? Int, 21000)
        XCTAssertTrue(h.sim.stats.paid.isEmpty)
        await h.stop()
    }

    func testEachFaultIsSeenByTheClientAsTheRightVerdict() async throws {
        let h = try SimHarness.start()
        let receipt = SimReceipts.paid("fault-1")
        let cases: [(AppleSimFaults, Set<String>)] = [
            (AppleSimFaults(errorRate: 1), ["retry:http_500", "retry:http_503"]),
            (AppleSimFaults(status21005Rate: 1), ["retry:status_21005"]),
            (AppleSimFaults(retryableRate: 1), ["retry:status_211xx"]),
            (AppleSimFaults(malformedRate: 1), ["retry:malformed_response"]),
            (AppleSimFaults(resetRate: 1), ["retry:connection_error"]),
        ]
        for (faults, expected) in cases {
            try h.sim.setFaults(faults)
            for _ in 0..<4 {
                let verdict = try await h.verify(receipt)
                XCTAssertTrue(expected.contains(verdict.label), "\(faults): \(verdict.label)")
            }
        }
        try h.sim.setFaults(AppleSimFaults(hangRate: 1))
        let hung = try await h.verify(receipt, timeout: .milliseconds(300))
        XCTAssertEqual(hung.label, "retry:timeout")

        try h.sim.setFaults(AppleSimFaults())
        let healthy = try await h.verify(receipt)
        XCTAssertEqual(healthy.label, "verified")
        let stats = h.sim.stats
        XCTAssertEqual(stats.byResult["hang"], 1)
        XCTAssertEqual(stats.byResult["reset"], 4)
        XCTAssertEqual(stats.byResult["malformed"], 4)
        XCTAssertEqual(stats.paid, ["fault-1"], "only the healthy answer counts as paid")
        await h.stop()  // releases the hung request instead of waiting out the hang
    }

    func testOutageWindowFromFlagsAndAtRuntime() async throws {
        let h = try SimHarness.start(arguments: ["--outage", "0s:250ms"])
        let receipt = SimReceipts.paid("o-1")
        let during = try await h.verify(receipt)
        XCTAssertEqual(during.label, "retry:http_503")
        // The window ends on its own; poll rather than assume a speed.
        var after = during
        for _ in 0..<100 where after.label != "verified" {
            try await Task.sleep(for: .milliseconds(50))
            after = try await h.verify(receipt)
        }
        XCTAssertEqual(after.label, "verified")

        let (status, state) = try await h.call("POST", "sim/outage", json: #"{"seconds": 60}"#)
        XCTAssertEqual(status, 200)
        XCTAssertEqual(state["outage_active"] as? Bool, true)
        let runtime = try await h.verify(receipt)
        XCTAssertEqual(runtime.label, "retry:http_503")
        try await h.call("POST", "sim/outage", json: #"{"seconds": 0}"#)
        let ended = try await h.verify(receipt)
        XCTAssertEqual(ended.label, "verified")
        XCTAssertGreaterThanOrEqual(h.sim.stats.byResult["outage"] ?? 0, 2)
        let (bad, _) = try await h.call("POST", "sim/outage", json: #"{"seconds": -1}"#)
        XCTAssertEqual(bad, 400)
        await h.stop()
    }

    func testLaterOutageIsPendingNotActive() async throws {
        let h = try SimHarness.start(arguments: ["--outage", "60s:10s"])
        let (_, faults) = try await h.call("GET", "sim/faults")
        XCTAssertEqual(faults["outage_active"] as? Bool, false)
        XCTAssertGreaterThan(faults["outage_starts_in_seconds"] as? Double ?? 0, 50)
        let verdict = try await h.verify(SimReceipts.paid("o-2"))
        XCTAssertEqual(verdict.label, "verified")
        await h.stop()
    }

    func testRuntimeFaultSwitchingOverHTTP() async throws {
        let h = try SimHarness.start()
        let receipt = SimReceipts.paid("r-1")
        var (status, faults) = try await h.call("POST", "sim/faults", json: #"{"error-rate": 1, "latency": "10ms"}"#)
        XCTAssertEqual(status, 200)
        XCTAssertEqual(faults["error_rate"] as? Double, 1)
        XCTAssertEqual(faults["latency"] as? String, "10ms")
        let failing = try await h.verify(receipt)
        XCTAssertTrue(failing.label.hasPrefix("retry:http_5"), failing.label)

        (status, faults) = try await h.call("POST", "sim/faults", json: #"{"error_rate": 0, "malformed_rate": "1"}"#)
        XCTAssertEqual(status, 200)
        let malformed = try await h.verify(receipt)
        XCTAssertEqual(malformed.label, "retry:malformed_response")

        (status, faults) = try await h.call("GET", "sim/faults")
        XCTAssertEqual(faults["malformed_rate"] as? Double, 1)
        XCTAssertEqual(faults["latency"] as? String, "10ms", "unlisted settings keep their value")

        let (tooMuch, error) = try await h.call("POST", "sim/faults", json: #"{"hang_rate": 0.5, "reset_rate": 0.6}"#)
        XCTAssertEqual(tooMuch, 400)
        XCTAssertNotNil(error["error"] as? String)
        let (unknown, _) = try await h.call("POST", "sim/faults", json: #"{"explode_rate": 1}"#)
        XCTAssertEqual(unknown, 400)
        XCTAssertEqual(h.sim.faults.malformedRate, 1, "a rejected change changes nothing")

        (status, faults) = try await h.call("POST", "sim/faults", json: #"{"clear": true}"#)
        XCTAssertEqual(faults["latency"] as? String, "off")
        let healthy = try await h.verify(receipt)
        XCTAssertEqual(healthy.label, "verified")
        await h.stop()
    }

    func testSeededFaultRollsReplay() async throws {
        func run() async throws -> [String] {
            let h = try SimHarness.start(arguments: ["--seed", "42", "--error-rate", "0.3", "--retryable-rate", "0.3"])
            var labels: [String] = []
            for _ in 0..<20 { labels.append(try await h.verify(SimReceipts.paid("seed-1")).label) }
            await h.stop()
            return labels
        }
        let first = try await run()
        let second = try await run()
        XCTAssertEqual(first, second)
        XCTAssertEqual(Set(first).count > 1, true, "a 60% fault rate over 20 rolls mixes outcomes")
    }

    func testFiveHundredConcurrentSlowRequestsAreAllAnswered() async throws {
        let h = try SimHarness.start(arguments: ["--latency", "200ms"])
        let client = try h.client(timeout: .seconds(15))
        let labels = await withTaskGroup(of: String.self) { group in
            for i in 0..<500 {
                group.addTask {
                    await client.verify(receiptData: SimReceipts.paid("c-\(i)"), attempt: 1, maxAttempts: 5).label
                }
            }
            var all: [String] = []
            for await label in group { all.append(label) }
            return all
        }
        XCTAssertEqual(labels.count, 500)
        XCTAssertEqual(labels.filter { $0 == "verified" }.count, 500, Set(labels).description)
        XCTAssertEqual(h.sim.stats.paid.count, 500)
        XCTAssertEqual(h.sim.stats.requests, 500)
        await h.stop()
    }
}

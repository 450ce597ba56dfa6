import AppleSim
import Foundation
import TestSupport
import XCTest

/// `receipt-worker apple-sim`, the real binary, over loopback.
final class AppleSimCommandTests: XCTestCase {
    let secret = "e2e-sim-secret-" + UUID().uuidString

    func testVerifiesAMintedReceiptChecksThePasswordAndStopsOnSigterm() async throws {
        let sim = try ChildProcess.receiptWorker(["apple-sim", "--listen", "127.0.0.1:0", "--shared-secret", secret, "--seed", "7"])
        defer { sim.signal(SIGKILL) }
        let port = try await sim.loggedPort("apple_sim_started")
        let http = try LoopbackClient()
        let receipt = SimReceipt(bundleID: "com.example.e2e",
                                 transactions: [.init(transactionID: "1000000001", productID: "coins_100")]).mint()

        let paid = try await http.send("POST", port: port, path: "/verifyReceipt", body: verifyBody(receipt, password: secret))
        XCTAssertEqual(paid.status, 200)
        XCTAssertEqual(paid.json["status"] as? Int, 0, "\(paid.json)")
        let inApp = (paid.json["receipt"] as? [String: Any])?["in_app"] as? [[String: Any]]
        XCTAssertEqual(inApp?.first?["transaction_id"] as? String, "1000000001")
        let wrongSecret = try await http.send("POST", port: port, path: "/verifyReceipt", body: verifyBody(receipt, password: "nope"))
        XCTAssertEqual(wrongSecret.json["status"] as? Int, 21004)
        let stats = try await http.send("GET", port: port, path: "/sim/stats")
        XCTAssertEqual(stats.json["requests_total"] as? Int, 2)

        sim.signal(SIGTERM)
        let code = try await sim.wait(timeout: 30)
        XCTAssertEqual(code, 0, sim.stderr)
        XCTAssertEqual(sim.stdout.components(separatedBy: "event=apple_sim_started").count, 2, "one start line: \(sim.stdout)")
        XCTAssertTrue(sim.stdout.contains("event=apple_sim_stopped requests=2"), sim.stdout)
        XCTAssertFalse((sim.stdout + sim.stderr).contains(secret), "the shared secret leaked")
        await http.shutdown()
    }

    func testTakesEveryFaultFlag() async throws {
        let sim = try ChildProcess.receiptWorker(["apple-sim", "--latency", "3s-6s", "--error-rate", "0.2", "--outage", "5s:10s",
                                                  "--listen", "127.0.0.1:0", "--shared-secret", "S", "--seed", "7",
                                                  "--hang-rate=0.1", "--reset-rate", "0.05", "--malformed-rate", "0.05",
                                                  "--status-21005-rate", "0.1", "--retryable-rate", "0.1"])
        defer { sim.signal(SIGKILL) }
        let port = try await sim.loggedPort("apple_sim_started")
        let http = try LoopbackClient()
        let faults = try await http.send("GET", port: port, path: "/sim/faults")
        XCTAssertEqual(faults.json["latency"] as? String, "3s-6s", "\(faults.json)")
        XCTAssertEqual(faults.json["error_rate"] as? Double, 0.2)
        XCTAssertEqual(faults.json["hang_rate"] as? Double, 0.1)
        XCTAssertEqual(faults.json["outage"] as? String, "5s:10s")
        sim.signal(SIGTERM)
        let code = try await sim.wait(timeout: 30)
        XCTAssertEqual(code, 0, sim.stderr)
        await http.shutdown()
    }

    func testBadFlagValuesGiveOneLineAndExitTwo() async throws {
        let cases: [([String], String)] = [
            (["--error-rate", "2"], "--error-rate"),
            (["--latency", "soon"], "--latency"),
            (["--outage", "5s"], "--outage"),
            (["--listen", "nowhere"], "--listen"),
            (["--seed", "-1"], "--seed"),
            (["--error-rate", "0.6", "--hang-rate", "0.6"], "more than 1"),
            (["--no-such-flag", "1"], "unknown flag --no-such-flag"),
            (["--shared-secret", secret, "--reset-rate", "x"], "--reset-rate"),
        ]
        for (arguments, expected) in cases {
            let result = try await ChildProcess.run([ChildProcess.receiptWorkerPath, "apple-sim"] + arguments)
            XCTAssertEqual(result.code, 2, "\(arguments): \(result.stderr)")
            XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, "\(arguments): \(result.stderr)")
            XCTAssertTrue(result.stderr.contains(expected), "\(arguments): \(result.stderr)")
            XCTAssertFalse(result.stderr.contains(secret), "the shared secret leaked")
        }
        let help = try await ChildProcess.run([ChildProcess.receiptWorkerPath, "apple-sim", "--help"])
        XCTAssertEqual(help.code, 0)
        XCTAssertTrue(help.stdout.contains(AppleSimConfiguration.usage), help.stdout)
    }

    private func verifyBody(_ receipt: String, password: String) -> String {
        #"{"receipt-data":"\#(receipt)","password":"\#(password)","exclude-old-transactions":false}"#
    }
}

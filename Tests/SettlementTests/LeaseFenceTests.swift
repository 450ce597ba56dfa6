import AppleSim
import Foundation
import XCTest

/// The lease fence inside one completion: a job whose lease passed to another worker while
/// Apple answered is neither credited nor finished; the rest of the batch is.
final class LeaseFenceTests: XCTestCase {
    typealias T = SimReceipt.Transaction

    func testABatchCreditsEveryJobButTheOneThatLostItsLease() async throws {
        let f = try await SettlementFixture()
        // Apple answers all three together, a second from now: one completion batch.
        try f.simulator.setFaults(AppleSimFaults(latency: SimLatency(.seconds(1))))
        var jobs: [Int] = []
        for n in 1...3 {
            try await f.order("o-\(n)", user: "u-\(n)", product: "coins_100")
            jobs.append(try await f.enqueue(user: "u-\(n)", order: "o-\(n)",
                                            receipt: f.receipt([T(transactionID: "t-\(n)", productID: "coins_100")])))
        }
        let running = try await eventually { try await f.client.query("SELECT count(*) FROM iap.jobs WHERE state = 'running'")[0]
            .decode(Int.self, at: 0) == 3 }
        XCTAssertTrue(running)
        // While Apple thinks, the second job's lease passes to another worker (an expiry and a rescue).
        _ = try await f.client.query("UPDATE iap.jobs SET leased_by = 'other', lease_expires_at = now() + interval '5 minutes' WHERE id = $1",
                                     [jobs[1]])
        for job in [jobs[0], jobs[2]] {
            let finished = try await f.finished(job)
            XCTAssertEqual(finished.outcome, "credited")
        }
        let lost = try await eventually { f.logs.lines.contains { $0.contains("event=lease_lost") && $0.contains("job_id=\(jobs[1])") } }
        XCTAssertTrue(lost)
        let ledger = try await f.ledger()
        XCTAssertEqual(ledger, ["t-1": "o-1", "t-3": "o-3"], "the fenced job's payment is not credited by this worker")
        let order = try await f.orderStatus("o-2")
        XCTAssertEqual(order, "open")
        let fenced = try await f.client.query("SELECT state, leased_by FROM iap.jobs WHERE id = $1", [jobs[1]])[0]
        XCTAssertEqual(try fenced.decode(String.self, at: 0), "running")
        XCTAssertEqual(try fenced.decode(String.self, at: 1), "other")
        await f.stop()
    }

    private func eventually(_ condition: () async throws -> Bool) async throws -> Bool {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return false
    }
}

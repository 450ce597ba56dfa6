import Foundation
@testable import Queue
import Synchronization
import XCTest

/// The verifications in flight, kept by claim (issue 25): what the deadline watchdog and the
/// shutdown see, whichever order jobs finish in.
final class RunningJobsTests: XCTestCase {
    func testAJobFinishedBeforeItsTaskIsAttachedIsNeitherOverdueNorCancelled() {
        var running = RunningJobs()
        let now = ContinuousClock.now
        let first = running.begin([10, 11, 12], deadline: now)
        let second = running.begin([20], deadline: now + .seconds(60))
        XCTAssertEqual(running.count, 4)
        running.finish(.init(claim: first, index: 1)) // finished at once, before its claim's tasks are known
        running.attach([Task {}, Task {}, Task {}], toClaim: first)
        running.attach([Task {}], toClaim: second)
        XCTAssertEqual(running.count, 3)
        XCTAssertEqual(running.overdue(at: now).map(\.id).sorted(), [10, 12])
        XCTAssertEqual(running.tasks.count, 3)
        running.finish(.init(claim: first, index: 1)) // twice: counted once
        running.finish(.init(claim: first, index: 0))
        running.finish(.init(claim: first, index: 2))
        XCTAssertEqual(running.count, 1)
        XCTAssertEqual(running.overdue(at: now + .seconds(61)).map(\.id), [20])
        running.finish(.init(claim: second, index: 0))
        running.attach([Task {}], toClaim: second) // a claim all of whose jobs are done keeps nothing
        XCTAssertEqual(running.count, 0)
        XCTAssertTrue(running.tasks.isEmpty)
    }

    /// A verification past its deadline is cancelled by the watchdog and written as a retry,
    /// while the jobs of the same claim that answered in time finish.
    func testAVerificationPastItsDeadlineIsRetriedAndItsClaimmatesFinish() async throws {
        let fixture = try await QueueFixture.make()
        try await fixture.enqueue(3)
        let hung = Mutex<Int?>(nil)
        let worker = fixture.worker(ScriptedHandler { job in
            let hangs = hung.withLock { first in
                if first == nil { first = job.id }
                return first == job.id
            }
            if hangs {
                try? await Task.sleep(for: .seconds(30))
                return .finish(.done, "credited")
            }
            return .finish(.done, "acknowledged")
        }) { $0.leaseSeconds = 3; $0.claimBatch = 3; $0.concurrency = 3; $0.maxAttempts = 1 } // deadline: 2.4 s
        let run = Task { await worker.run() }
        let settled = try await fixture.eventually(20) { try await fixture.states() == ["done": 2, "timed_out": 1] }
        worker.shutdown()
        await run.value
        let states = try await fixture.states()
        XCTAssertTrue(settled, "\(states)")
        let row = try await fixture.client.query("SELECT id, last_error FROM iap.jobs WHERE state = 'timed_out'")[0]
        XCTAssertEqual(try row.decode(Int.self, at: 0), hung.withLock { $0 })
        XCTAssertEqual(try row.decode(String?.self, at: 1), "verification exceeded 2 s")
        await fixture.client.close()
    }
}

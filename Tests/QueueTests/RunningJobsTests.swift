import Foundation
@testable import Queue
import Synchronization
import XCTest

/// The verifications in flight, kept by claim: what the deadline watchdog and the
/// shutdown see, whichever order jobs finish in.
final class RunningJobsTests: XCTestCase {
    func testAJobFinishedBeforeItsTakerIsAttachedIsNeitherOverdueNorCancelled() throws {
        var running = RunningJobs()
        let now = ContinuousClock.now
        let first = running.begin([10, 11, 12], deadline: now)
        let second = running.begin([20], deadline: now + .seconds(60))
        XCTAssertEqual(running.count, 4)
        // Taker 0 answers job 10 at once, then suspends on job 11; taker 1 takes job 12.
        let takerA = try XCTUnwrap(running.newTaker(for: first))
        let a0 = try XCTUnwrap(running.take(from: first, by: takerA))
        running.finish(a0) // finished at once, before its taker's task is known
        _ = try XCTUnwrap(running.take(from: first, by: takerA))
        let taskA = Task {}
        running.attach(taskA, taker: takerA, to: first)
        let takerB = try XCTUnwrap(running.newTaker(for: first))
        let b0 = try XCTUnwrap(running.take(from: first, by: takerB))
        XCTAssertNil(running.take(from: first, by: takerB), "every job is taken")
        XCTAssertNil(running.newTaker(for: first), "no taker is needed any more")
        let taskB = Task {}
        running.attach(taskB, taker: takerB, to: first)
        let takerC = try XCTUnwrap(running.newTaker(for: second))
        let c0 = try XCTUnwrap(running.take(from: second, by: takerC))
        running.attach(Task {}, taker: takerC, to: second)
        XCTAssertEqual(running.count, 3)
        let overdue = running.overdue(at: now)
        XCTAssertEqual(overdue.map(\.id).sorted(), [11, 12])
        XCTAssertEqual(overdue.first { $0.id == 11 }?.task, taskA, "a job is cancelled through the taker running it")
        XCTAssertEqual(overdue.first { $0.id == 12 }?.task, taskB)
        XCTAssertEqual(running.tasks.count, 3)
        running.finish(a0) // twice: counted once
        running.finish(.init(claim: first, index: 1))
        running.finish(b0)
        XCTAssertEqual(running.count, 1)
        XCTAssertEqual(running.overdue(at: now + .seconds(61)).map(\.id), [20])
        running.finish(c0)
        XCTAssertEqual(running.count, 0)
        XCTAssertTrue(running.tasks.isEmpty)
    }

    /// Jobs answered without suspending share a task; each one that waits gets its own, and a
    /// taker cancelled for one job (deadline, shutdown) takes no other.
    func testJobsAnsweredAtOnceShareATaskAndEachWaitingJobHasItsOwn() async throws {
        let fixture = try await QueueFixture.make()
        try await fixture.enqueue(12)
        // Each job's task, by its identity (every taker of a claim lives as long as the claim).
        let taskOf = Mutex<[Int: Int]>([:])
        let worker = fixture.worker(ScriptedHandler { job in
            let task = withUnsafeCurrentTask { $0?.hashValue } ?? 0
            taskOf.withLock { $0[job.id] = task }
            if job.id % 4 == 0 { try? await Task.sleep(for: .milliseconds(200)) } // waits, as on Apple
            return .finish(.done, "acknowledged")
        }) { $0.claimBatch = 12; $0.concurrency = 12 }
        let run = Task { await worker.run() }
        let settled = try await fixture.eventually(20) { try await fixture.states() == ["done": 12] }
        worker.shutdown()
        await run.value
        XCTAssertTrue(settled)
        let tasks = taskOf.withLock { $0 }
        let ids = tasks.keys.sorted()
        XCTAssertEqual(ids.count, 12)
        // The next job runs in the same task as the last unless the last one waited.
        for (job, next) in zip(ids, ids.dropFirst()) {
            XCTAssertEqual(tasks[job] == tasks[next], job % 4 != 0, "jobs \(job) and \(next)")
        }
        XCTAssertEqual(Set(tasks.values).count, 3 + (ids.last! % 4 == 0 ? 0 : 1))
        await fixture.client.close()
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

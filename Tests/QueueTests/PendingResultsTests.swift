@testable import Queue
import XCTest

/// How the completer decides what to write and when (PendingResults), without a database.
final class PendingResultsTests: XCTestCase {
    private struct Result: PendingResult {
        let id: Int
        let settles: Bool
    }

    private func decided(_ ids: Range<Int>) -> [Result] { ids.map { Result(id: $0, settles: false) } }

    func testResultsGatherBehindTheWriteInFlight() {
        var pending = PendingResults<Result>()
        decided(0..<3).forEach { pending.append($0) }
        XCTAssertTrue(pending.due(limit: 10))
        XCTAssertEqual(pending.take(upTo: 10).batch.map(\.id), [0, 1, 2], "nothing in flight: taken at once")
        decided(3..<9).forEach { pending.append($0) }
        XCTAssertFalse(pending.due(limit: 10), "a part batch waits for the write in flight")
        XCTAssertTrue(pending.take(upTo: 10).batch.isEmpty)
        pending.finished()
        XCTAssertEqual(pending.take(upTo: 10).batch.map(\.id), Array(3..<9), "then goes as one batch")
    }

    func testAWholeBatchDoesNotWait() {
        var pending = PendingResults<Result>()
        pending.append(Result(id: 0, settles: false))
        _ = pending.take(upTo: 4)
        decided(1..<7).forEach { pending.append($0) }
        XCTAssertTrue(pending.due(limit: 4), "a whole batch waits: a second loop writes it")
        XCTAssertEqual(pending.take(upTo: 4).batch.map(\.id), [1, 2, 3, 4])
        XCTAssertEqual(pending.writing, 2)
        XCTAssertFalse(pending.due(limit: 4))
    }

    func testResultsToSettleGoToAnyFreeLoop() {
        var pending = PendingResults<Result>()
        pending.append(Result(id: 0, settles: true))
        _ = pending.take(upTo: 10)
        pending.append(Result(id: 1, settles: true))
        pending.append(Result(id: 2, settles: false))
        XCTAssertTrue(pending.due(limit: 10), "credits are settled side by side")
        XCTAssertEqual(pending.take(upTo: 10, linger: true).batch.map(\.id), [1, 2], "and never linger")
        XCTAssertEqual(pending.settling, 0)
        XCTAssertFalse(pending.due(limit: 10))
    }

    func testAPartBatchLingersOnceThenGoes() {
        var pending = PendingResults<Result>()
        decided(0..<2).forEach { pending.append($0) }
        let first = pending.take(upTo: 10, linger: true)
        XCTAssertTrue(first.batch.isEmpty)
        XCTAssertTrue(first.linger, "the caller holds the turn while the burst gathers")
        decided(2..<5).forEach { pending.append($0) }
        XCTAssertFalse(pending.due(limit: 10), "no other loop takes the gathering results")
        XCTAssertEqual(pending.takeAfterLingering(upTo: 10).map(\.id), Array(0..<5))
        XCTAssertEqual(pending.writing, 1)
        pending.finished()
        XCTAssertEqual(pending.writing, 0)
    }

    func testALingerWhoseResultsWereTakenGivesItsTurnBack() {
        var pending = PendingResults<Result>()
        decided(0..<2).forEach { pending.append($0) }
        XCTAssertTrue(pending.take(upTo: 4, linger: true).linger)
        decided(2..<4).forEach { pending.append($0) }
        XCTAssertEqual(pending.take(upTo: 4).batch.count, 4, "a whole batch gathered: another loop took it")
        XCTAssertTrue(pending.takeAfterLingering(upTo: 4).isEmpty)
        XCTAssertEqual(pending.writing, 1, "only the other loop's write is in flight")
    }
}

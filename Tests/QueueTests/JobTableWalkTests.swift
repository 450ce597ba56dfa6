import Queue
import XCTest

final class JobTableWalkTests: XCTestCase {
    func testSlicesCoverTheTableOncePerPeriodNewestFirstThenStartAgain() {
        // 100,000 ids, a slice every 15 s of a 600 s period: 40 slices of 2,500.
        let walk = JobTableWalk(period: 600, interval: 15)
        var slices: [ClosedRange<Int>] = []
        for _ in 0..<40 { slices.append(walk.slice(first: 1, last: 100_000)) }
        XCTAssertEqual(slices.first, 97_501...100_000)
        XCTAssertEqual(slices.last, 1...2_500)
        XCTAssertEqual(slices.map(\.count).reduce(0, +), 100_000, "every id once")
        for (upper, lower) in zip(slices, slices.dropFirst()) { XCTAssertEqual(lower.upperBound + 1, upper.lowerBound) }
        // The next cycle starts again from the newest id, including jobs made meanwhile.
        XCTAssertEqual(walk.slice(first: 1, last: 103_000), 100_426...103_000)
    }

    func testASmallTableIsReadWholeAndAShrunkTableRestartsTheWalk() {
        let walk = JobTableWalk(period: 600, interval: 5)
        XCTAssertEqual(walk.slice(first: 40, last: 900), 40...900, "under the smallest slice: all of it")
        XCTAssertEqual(walk.slice(first: 40, last: 900), 40...900)
        XCTAssertEqual(walk.slice(first: 7, last: 7), 7...7)
        let large = JobTableWalk(period: 600, interval: 60, smallestSlice: 10)
        XCTAssertEqual(large.slice(first: 1, last: 1_000), 901...1_000)
        // Old jobs deleted (retention) past where the walk stood: it starts again from the top.
        XCTAssertEqual(large.slice(first: 950, last: 1_200), 1_175...1_200)
    }

    /// A pass reads the table's ends once, when it begins: its later slices come from them.
    func testAPassUnderWayNeedsNoBounds() {
        let walk = JobTableWalk(period: 600, interval: 150)  // four slices a pass
        XCTAssertNil(walk.sliceOfPassUnderWay(), "no pass yet")
        XCTAssertEqual(walk.slice(first: 1, last: 100_000), 75_001...100_000)
        XCTAssertEqual(walk.sliceOfPassUnderWay(), 50_001...75_000)
        XCTAssertEqual(walk.sliceOfPassUnderWay(), 25_001...50_000)
        XCTAssertEqual(walk.sliceOfPassUnderWay(), 1...25_000)
        XCTAssertNil(walk.sliceOfPassUnderWay(), "the pass reached the bottom: the next one reads the ends again")
        XCTAssertEqual(walk.slice(first: 20_000, last: 120_000), 95_000...120_000)
        XCTAssertEqual(walk.sliceOfPassUnderWay(), 69_999...94_999, "slices of the new pass's size")
    }
}

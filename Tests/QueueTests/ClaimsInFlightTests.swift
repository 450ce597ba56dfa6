@testable import Queue
import XCTest

/// When the claim loop starts a claim and how big (ClaimsInFlight), without a database.
final class ClaimsInFlightTests: XCTestCase {
    func testASecondClaimRunsBesideTheFirstOnlyForAWholeBatch() {
        var claims = ClaimsInFlight(most: 2, batch: 100, concurrency: 300)
        XCTAssertEqual(claims.begin(verifying: 300, writing: 600), .init(limit: 100, handingBack: false, half: 0))
        XCTAssertEqual(claims.reserved, 100)
        XCTAssertEqual(claims.begin(verifying: 300, writing: 600), .init(limit: 100, handingBack: false, half: 1),
                       "200 slots left unreserved: a whole batch beside the first")
        XCTAssertNil(claims.begin(verifying: 300, writing: 600), "two in flight: the most")

        var narrow = ClaimsInFlight(most: 2, batch: 100, concurrency: 150)
        XCTAssertEqual(narrow.begin(verifying: 150, writing: 300)?.limit, 100)
        XCTAssertNil(narrow.begin(verifying: 150, writing: 300), "50 slots left: not worth a claim that scans the first one's rows")
    }

    func testClaimsSideBySideStartInDifferentHalvesOfTheReadySetAndOneAloneAlternates() {
        var claims = ClaimsInFlight(most: 2, batch: 100, concurrency: 400)
        let first = claims.begin(verifying: 400, writing: 800)!
        let second = claims.begin(verifying: 400, writing: 800)!
        XCTAssertEqual([first.half, second.half], [0, 1])
        // The first came back: its successor starts where no claim is in flight, its own half.
        claims.succeeded(first, claimed: 100)
        let third = claims.begin(verifying: 400, writing: 800)!
        XCTAssertEqual(third.half, 0, "the second still runs in half 1")
        claims.succeeded(second, claimed: 100)
        claims.succeeded(third, claimed: 100)
        // One claim at a time takes each half in turn, so neither waits for the other to empty.
        var lone = ClaimsInFlight(most: 1, batch: 100, concurrency: 100)
        var halves: [Int] = []
        for _ in 0..<4 {
            let claim = lone.begin(verifying: 100, writing: 200)!
            halves.append(claim.half)
            lone.succeeded(claim, claimed: 100)
        }
        XCTAssertEqual(halves, [0, 1, 0, 1])
        // A failed claim gives its half back too.
        var failing = ClaimsInFlight(most: 2, batch: 10, concurrency: 40)
        let failed = failing.begin(verifying: 40, writing: 80)!
        _ = failing.failed(failed, connectionLost: false)
        failing.end(failed)
        XCTAssertEqual(failing.begin(verifying: 40, writing: 80)?.half, 1, "alternating: nothing in flight")
        XCTAssertEqual(failing.begin(verifying: 40, writing: 80)?.half, 0)
    }

    func testSlotsAreReservedUntilTheClaimEnds() {
        var claims = ClaimsInFlight(most: 2, batch: 100, concurrency: 100)
        let first = claims.begin(verifying: 100, writing: 200)!
        XCTAssertEqual(claims.slots(verifying: 100, writing: 200), 0)
        // The claim's jobs have started: the worker now counts them as verifying and held.
        claims.succeeded(first, claimed: 100)
        XCTAssertEqual(claims.running, 0)
        XCTAssertEqual(claims.reserved, 0)
        XCTAssertTrue(claims.backlog, "a full claim: more may wait")
        XCTAssertEqual(claims.slots(verifying: 30, writing: 100), 30, "slots freed by verifications are claimed as they come")
        claims.succeeded(claims.begin(verifying: 30, writing: 100)!, claimed: 12)
        XCTAssertFalse(claims.backlog)
    }

    func testWhileWritesHoldTheSlotsABacklogWaitsForHalfABatch() {
        var claims = ClaimsInFlight(most: 1, batch: 100, concurrency: 100)
        claims.succeeded(claims.begin(verifying: 100, writing: 200)!, claimed: 100)
        XCTAssertEqual(claims.slots(verifying: 100, writing: 30), 0, "30 leases free while results are written")
        XCTAssertEqual(claims.slots(verifying: 100, writing: 50), 50)
    }

    func testAHandBackRunsAlone() {
        var claims = ClaimsInFlight(most: 2, batch: 100, concurrency: 400)
        let first = claims.begin(verifying: 400, writing: 800)!
        claims.handBackDue = true
        XCTAssertNil(claims.begin(verifying: 400, writing: 800), "a claim in flight holds leases the worker does not know yet")
        claims.succeeded(first, claimed: 100)
        let handBack = claims.begin(verifying: 300, writing: 700)
        XCTAssertEqual(handBack?.handingBack, true)
        XCTAssertFalse(claims.handBackDue)
        XCTAssertNil(claims.begin(verifying: 300, writing: 700), "nothing beside it either")
    }

    func testAClaimThatSucceedsBesideAFailedOneDoesNotEndItsBackoff() {
        var claims = ClaimsInFlight(most: 2, batch: 10, concurrency: 40)
        let first = claims.begin(verifying: 40, writing: 80)!
        let second = claims.begin(verifying: 40, writing: 80)!
        _ = claims.failed(first, connectionLost: false)
        claims.succeeded(second, claimed: 10)
        XCTAssertEqual(claims.slots(verifying: 40, writing: 80), 0, "the failed claim still waits out its backoff")
        claims.end(first)
        XCTAssertEqual(claims.slots(verifying: 40, writing: 80), 10)
    }

    func testAFailedClaimBacksOffAndAFailedHandBackIsDueAgain() {
        var claims = ClaimsInFlight(most: 2, batch: 10, concurrency: 40)
        claims.handBackDue = true
        let handBack = claims.begin(verifying: 40, writing: 80)!
        XCTAssertEqual(claims.failed(handBack, connectionLost: false), 0.1)
        XCTAssertTrue(claims.handBackDue, "the leases were not handed back")
        XCTAssertEqual(claims.running, 1, "the failed claim keeps its turn while it waits")
        XCTAssertEqual(claims.slots(verifying: 40, writing: 80), 0, "and no other claim starts meanwhile")
        claims.end(handBack)
        let next = claims.begin(verifying: 10, writing: 20)!
        XCTAssertEqual(claims.failed(next, connectionLost: true), 0.2)
        claims.end(next)
        var backoff = 0.0
        for _ in 0..<10 {
            let claim = claims.begin(verifying: 10, writing: 20)!
            backoff = claims.failed(claim, connectionLost: false)
            claims.end(claim)
        }
        XCTAssertEqual(backoff, 5, "capped")
        claims.succeeded(claims.begin(verifying: 10, writing: 20)!, claimed: 0)
        let after = claims.begin(verifying: 10, writing: 20)!
        XCTAssertEqual(claims.failed(after, connectionLost: false), 0.1, "a success resets the backoff")
    }
}

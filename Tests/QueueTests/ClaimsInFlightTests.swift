@testable import Queue
import XCTest

/// When the claim loop starts a claim and how big (ClaimsInFlight), without a database.
final class ClaimsInFlightTests: XCTestCase {
    func testASecondClaimRunsBesideTheFirstOnlyForAWholeBatch() {
        var claims = ClaimsInFlight(most: 2, batch: 100, concurrency: 300)
        XCTAssertEqual(claims.begin(verifying: 300, writing: 600), .init(limit: 100, handingBack: false))
        XCTAssertEqual(claims.reserved, 100)
        XCTAssertEqual(claims.begin(verifying: 300, writing: 600), .init(limit: 100, handingBack: false, half: 0),
                       "200 slots left unreserved: a whole batch beside the first")
        XCTAssertNil(claims.begin(verifying: 300, writing: 600), "two in flight: the most")

        var narrow = ClaimsInFlight(most: 2, batch: 100, concurrency: 150)
        XCTAssertEqual(narrow.begin(verifying: 150, writing: 300)?.limit, 100)
        XCTAssertNil(narrow.begin(verifying: 150, writing: 300), "50 slots left: not worth a claim that scans the first one's rows")
    }

    func testAClaimAloneReadsTheWholeReadySetAndClaimsBesideOthersStartInDifferentHalves() {
        var claims = ClaimsInFlight(most: 2, batch: 100, concurrency: 400)
        let first = claims.begin(verifying: 400, writing: 800)!
        let second = claims.begin(verifying: 400, writing: 800)!
        XCTAssertEqual(first.half, nil, "alone: the whole set, oldest first")
        XCTAssertEqual(second.half, 0, "beside it: a half")
        // The first came back: its successor begins beside the second, in the other half.
        claims.succeeded(first, claimed: 100)
        let third = claims.begin(verifying: 400, writing: 800)!
        XCTAssertEqual(third.half, 1)
        claims.succeeded(second, claimed: 100)
        let fourth = claims.begin(verifying: 400, writing: 800)!
        XCTAssertEqual(fourth.half, 0, "the half no claim is in")
        claims.succeeded(third, claimed: 100)
        claims.succeeded(fourth, claimed: 100)
        // One claim at a time reads the whole set every time.
        var lone = ClaimsInFlight(most: 1, batch: 100, concurrency: 100)
        for _ in 0..<3 {
            let claim = lone.begin(verifying: 100, writing: 200)!
            XCTAssertNil(claim.half)
            lone.succeeded(claim, claimed: 100)
        }
        // A failed claim gives its half back too.
        var failing = ClaimsInFlight(most: 2, batch: 10, concurrency: 40)
        let alone = failing.begin(verifying: 40, writing: 80)!
        let beside = failing.begin(verifying: 40, writing: 80)!
        _ = failing.failed(beside, connectionLost: false)
        failing.end(beside)
        failing.succeeded(alone, claimed: 10)
        XCTAssertNil(failing.begin(verifying: 40, writing: 80)?.half, "nothing in flight")
        XCTAssertEqual(failing.begin(verifying: 40, writing: 80)?.half, 1, "the other of the last half taken")
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

    func testAFullClaimHandsItsTurnToTheClaimSentAheadOfItsReply() {
        var claims = ClaimsInFlight(most: 2, batch: 100, concurrency: 400)
        let first = claims.begin(verifying: 400, writing: 800)!
        let second = claims.begin(verifying: 400, writing: 800)!
        XCTAssertNil(claims.begin(verifying: 400, writing: 800), "two in flight: the most")
        // First's reply is in, its jobs not held yet: its 100 slots stay reserved beside the new claim's.
        let ahead = claims.chain(after: first, claimed: 100, verifying: 400, writing: 800)
        XCTAssertEqual(ahead, .init(limit: 100, handingBack: false, half: 1),
                       "first began alone; its lane now runs beside the second's, in the other half")
        XCTAssertEqual(claims.reserved, 300)
        claims.succeeded(first, claimed: 100)
        XCTAssertEqual(claims.running, 2, "the claim sent ahead took over first's turn")
        XCTAssertEqual(claims.reserved, 200)
        XCTAssertNil(claims.chain(after: second, claimed: 100, verifying: 250, writing: 700),
                     "250 slots free less 200 reserved: not a whole batch")
        XCTAssertNil(claims.chain(after: second, claimed: 99, verifying: 400, writing: 800), "a short claim: the queue is empty")
        claims.succeeded(second, claimed: 99)
        XCTAssertEqual(claims.chain(after: ahead!, claimed: 100, verifying: 600, writing: 1_000)?.half, 1, "a lane keeps its half")
        claims.handBackDue = true
        XCTAssertNil(claims.chain(after: ahead!, claimed: 100, verifying: 400, writing: 800), "a hand-back waits for the claims in flight")
    }

    func testAClaimSentAheadWhoseReplyIsLostHandsItsLeasesBack() {
        var claims = ClaimsInFlight(most: 2, batch: 100, concurrency: 300)
        let first = claims.begin(verifying: 300, writing: 600)!
        let ahead = claims.chain(after: first, claimed: 100, verifying: 300, writing: 600)!
        _ = claims.failed(first, connectionLost: true)
        claims.abandon(ahead)
        claims.end(first)
        XCTAssertEqual(claims.running, 0)
        XCTAssertEqual(claims.reserved, 0)
        XCTAssertEqual(claims.begin(verifying: 300, writing: 600)?.handingBack, true)
    }
}

import Queue
@testable import Settlement
import XCTest

/// What a settlement will announce waits for its transaction by claim (job and lease): after a
/// rescue and a re-claim by the same worker, a stale result and a new one can sit in two
/// batches at once, and one batch's rollback must not drop the other's committed announcements.
final class PendingEffectsTests: XCTestCase {
    func testTwoClaimsOfOneJobKeepTheirOwnAnnouncements() {
        let pending = PendingEffects()
        var stale = SettlementEffects()
        stale.credits = 1
        var fresh = SettlementEffects()
        fresh.alerts = [(NewAlert(kind: .paidNotCredited, transactionID: "2000000300", reason: "no_open_order"), 5)]
        let first = JobRun(jobID: 7, leaseID: 10, attempt: 1), second = JobRun(jobID: 7, leaseID: 11, attempt: 2)
        pending.store(stale, for: first)
        pending.store(fresh, for: second)
        let rolledBack = pending.take([first])
        XCTAssertEqual(rolledBack.map(\.credits), [1], "the stale claim's batch rolled back: only its effects go")
        let committed = pending.take([second])
        XCTAssertEqual(committed.flatMap(\.alerts).map(\.1), [5], "the other batch committed: its alert is still announced")
        XCTAssertTrue(pending.take([first, second]).isEmpty)
    }
}

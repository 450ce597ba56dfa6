import Foundation
import Postgres
@testable import Queue
import XCTest

/// A duty carries its term into its statements: a statement that reaches the server after the
/// term ended in the database changes nothing, whatever the process's own clock believes.
final class LeaderFenceTests: XCTestCase {
    func testADutyStatementOfAnEndedTermChangesNothing() async throws {
        let fixture = try await QueueFixture.make()
        try await fixture.enqueue(2)
        _ = try await fixture.client.query("UPDATE iap.jobs SET state = 'timed_out', attempts = 3")
        let fence = try await LeaderLeaseStore(client: fixture.client).acquireOrRenew(name: Maintenance.leaseName, leaderID: "leader-1", ttl: 60)
        let clock = LeaseClock()
        clock.granted(sentAt: .now, length: .seconds(60), fence: try XCTUnwrap(fence))
        let term = try XCTUnwrap(clock.current())

        // Another process took the lease over (this one was paused past it, say); this process's
        // clock still says it leads.
        _ = try await fixture.client.query("UPDATE iap.leader SET leader_id = 'leader-2', elected_at = now()")
        do {
            _ = try await fixture.store.sweepTimedOut(under: term)
            XCTFail("a sweep ran under an ended term")
        } catch {
            XCTAssertTrue(error is LeaseEnded, "\(error)")
        }
        let untouched = try await fixture.states()["timed_out"]
        XCTAssertEqual(untouched, 2)

        // Its own term, still held in the database: the statement runs.
        _ = try await fixture.client.query("DELETE FROM iap.leader")
        let renewed = try await LeaderLeaseStore(client: fixture.client).acquireOrRenew(name: Maintenance.leaseName, leaderID: "leader-1", ttl: 60)
        clock.granted(sentAt: .now, length: .seconds(60), fence: try XCTUnwrap(renewed))
        let swept = try await fixture.store.sweepTimedOut(under: try XCTUnwrap(clock.current()))
        XCTAssertEqual(swept.count, 2)
        await fixture.client.close()
    }
}

import Foundation
import HTTP
import XCTest

/// The overview says what to do first: unpaid buyers before anything else, a fleet that is down
/// even with an empty queue (and when a worker was last seen), a high Apple error rate flagged;
/// zeros are quiet.
final class ConsoleOverviewFirstTests: XCTestCase {
    func testTheOverviewSaysWhatToDoFirst() async throws {
        let harness = try await ConsoleHarness()
        let session = try ConsoleSession(baseURL: harness.baseURL)
        _ = try await session.signIn("vera", password: ConsoleHarness.password)
        // No worker has ever run here; the queue is empty (the fixture's jobs are finished).
        let fresh = try await session.get("/").text
        let first = try XCTUnwrap(fresh.range(of: "<ol class=\"first\">").map { String(fresh[$0.lowerBound...].prefix(1500)) })
        let unpaid = try XCTUnwrap(first.range(of: "3 payment(s) not credited</a>: the buyers paid and got nothing")).lowerBound
        let fleet = try XCTUnwrap(first.range(of: "No worker is alive</a>: No worker has been seen by this database")).lowerBound
        XCTAssertLessThan(unpaid, fleet, "buyers who paid come first")
        XCTAssertTrue(fresh.contains("No worker is alive: the queue is empty now, but new payments will wait."), "calm is not shown as calm")
        XCTAssertTrue(fresh.contains("<dd class=\"zero\">0</dd>"), "a zero is quiet")

        // A leader that stopped: when it was last seen. Apple erring on 40 % of the last hour's jobs: flagged.
        _ = try await harness.client.query("""
            INSERT INTO iap.leader (name, leader_id, expires_at) VALUES ('maintenance', 'host-b-2-y', '2026-11-20 10:15:00+00')
            """)
        _ = try await harness.client.query("INSERT INTO iap.job_finishes (state, outcome, jobs, retried) VALUES ('done', 'credited', 50, 20)")
        let down = try await session.get("/").text
        XCTAssertTrue(down.contains("Last seen: host-b-2-y, whose leadership lease ran out at 2026-11-20 10:15 UTC."), down)
        XCTAssertTrue(down.contains("Apple error rate 40.0 % in the last hour: Apple is failing or slow"), down)
        XCTAssertTrue(down.contains("<div class=\"flag\"><dt>Apple error rate</dt><dd>40.0 % <span class=\"why block\">high:"), down)

        // Nothing open, a worker alive, Apple answering: nothing needs a person.
        _ = try await harness.client.query("UPDATE iap.alerts SET state = 'resolved', resolved_at = now(), resolution = 'test'")
        _ = try await harness.client.query("UPDATE iap.leader SET expires_at = now() + interval '30 seconds'")
        _ = try await harness.client.query("DELETE FROM iap.job_finishes")
        let calm = try await session.get("/").text
        XCTAssertTrue(calm.contains("<p class=\"calm\">Nothing needs a person now.</p>"), calm)
        await session.close()
        await harness.close()
    }
}

import Foundation
import Observability
import Postgres
import TestSupport
@testable import Workloads
import XCTest

/// `bench nemesis` in short, with a fixed seed: every kind of fault takes effect (the schedule
/// covers each kind before repeating one), every finished job, alert, refund and webhook call is
/// announced exactly once by its key, and the checker is shown to fail on one announcement
/// doubled or dropped.
final class NemesisTests: XCTestCase {
    func testShortFixedSeedNemesisCoversEveryFaultAndCountsEveryAnnouncementOnce() async throws {
        var settings = NemesisBenchmark.Settings()
        settings.seconds = 120
        // This seed's third fault hangs the synchronous standby and fails over to it; its fourth
        // loses commits with an asynchronous standby.
        settings.seed = 54
        settings.pace = 0.5
        // Shorter deadlines and lease than production's keep a hung primary's, a hung standby's
        // and a paused worker's cost inside the test's budget.
        settings.callTimeout = 5
        settings.connectTimeout = 3
        settings.leaseSeconds = 6
        settings.drainLimit = .seconds(60)
        let context = BenchContext(databaseURL: "", cluster: nil, migrator: try Migrator(directory: TestDatabase.migrationsDirectory),
                                   numbers: [:], logger: Logger(minimumLevel: .error), binaryPath: ChildProcess.receiptWorkerPath)
        let verdict = try await NemesisBenchmark(context: context, settings: settings).outcome()

        // Coverage: each kind applied and seen to take effect.
        XCTAssertEqual(verdict.coverage.rows.map(\.kind), NemesisFaultKind.scheduled)
        for row in verdict.coverage.rows {
            XCTAssertGreaterThan(row.tookEffect, 0, "\(row.kind.rawValue): applied \(row.applied), took effect \(row.tookEffect)")
        }
        XCTAssertTrue(verdict.coverage.passed, verdict.coverage.problems.joined(separator: "; "))
        XCTAssertGreaterThan(verdict.coverage.receiptsFed, 1_000)

        // Every announcement once: finished jobs, alerts and refunds in the logs, alerts at the webhook.
        let counted: [NemesisAnnouncement.Stream] = [.jobFinished, .alertLine, .webhook, .creditRevoked]
        for stream in counted {
            let count = try XCTUnwrap(verdict.announcements[stream])
            XCTAssertGreaterThan(count.once, 0, "\(stream.rawValue)")
            XCTAssertTrue(count.passed, "\(stream.rawValue): \(count)")
        }
        XCTAssertTrue(verdict.passed, "the nemesis's check (its result lines are in the test output)")
        XCTAssertTrue(verdict.runPassed, "recovery, failover bound and coverage (the result lines are in the test output)")

        // The knob: the same run counted with one announcement doubled, or dropped, fails.
        for stream in counted {
            for tampering in [NemesisTally.Tampering.double(stream), .drop(stream)] {
                let tampered = verdict.recounted(tampering)
                XCTAssertNotNil(tampered.tampered, "\(tampering): an announcement to tamper with")
                XCTAssertFalse(tampered.passed, "\(tampering) of \(tampered.tampered ?? "-") went unnoticed")
            }
        }
    }
}

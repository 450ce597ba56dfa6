import Foundation
import Observability
import Postgres
import TestSupport
import Workloads
import XCTest

/// `bench nemesis` in short, with a fixed seed: every kind of fault once (the schedule covers
/// each kind before repeating one), and the exactly-once check passes.
final class NemesisTests: XCTestCase {
    func testShortFixedSeedNemesisPassesTheExactlyOnceCheck() async throws {
        var settings = NemesisBenchmark.Settings()
        settings.seconds = 45
        settings.seed = 21
        settings.pace = 0.5
        // Shorter deadlines than production's keep a hung primary's cost inside the test's budget.
        settings.callTimeout = 5
        settings.connectTimeout = 3
        settings.drainLimit = .seconds(60)
        let context = BenchContext(databaseURL: "", cluster: nil, migrator: try Migrator(directory: TestDatabase.migrationsDirectory),
                                   numbers: [:], logger: Logger(minimumLevel: .error), binaryPath: ChildProcess.receiptWorkerPath)
        let passed = try await NemesisBenchmark(context: context, settings: settings).verdict()
        XCTAssertTrue(passed, "the nemesis's check (its result lines are in the test output)")
    }
}

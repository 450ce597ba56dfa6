import Foundation
import Observability
@testable import Workloads
import XCTest

/// The nemesis's checker on its own: announcements counted by key, with exactly the excuses a
/// kill or a failover that lost commits can explain, and a schedule that covers every kind.
final class NemesisCheckerTests: XCTestCase {
    private func line(_ key: String?, _ stream: NemesisAnnouncement.Stream = .jobFinished, at: Double = 100, worker: Int? = 0,
                      repeated: Bool = false) -> NemesisAnnouncement {
        NemesisAnnouncement(stream: stream, key: key, repeated: repeated, at: at, worker: stream == .webhook ? nil : worker)
    }

    private func expectation(_ rows: [NemesisAnnouncement.Stream: [(String, Double)]]) -> NemesisExpectation {
        var expectation = NemesisExpectation()
        for (stream, list) in rows { expectation.rows[stream] = list.map { NemesisExpectation.Row(key: $0.0, at: $0.1) } }
        return expectation
    }

    func testEachKeyOnceAndEveryDoubleDropPhantomOrKeylessLineFails() {
        let tally = NemesisTally(expectation: expectation([.jobFinished: [("credited:t1", 10), ("credited:t2", 11), ("credited:t3", 12)]]),
                                 windows: NemesisTally.Windows())
        let clean = [line("credited:t1"), line("credited:t2"), line("credited:t3")]
        let counted = tally.count(clean).counts[.jobFinished]!
        XCTAssertEqual(counted.once, 3)
        XCTAssertTrue(counted.passed)

        let doubled = tally.count(clean + [line("credited:t2", worker: 1)]).counts[.jobFinished]!
        XCTAssertEqual(doubled.doubled, 1)
        XCTAssertEqual(doubled.examples, ["doubled:credited:t2"])
        XCTAssertFalse(doubled.passed)

        let dropped = tally.count(Array(clean.dropLast())).counts[.jobFinished]!
        XCTAssertEqual(dropped.missing, 1)
        XCTAssertFalse(dropped.passed)

        let phantom = tally.count(clean + [line("credited:t9")]).counts[.jobFinished]!
        XCTAssertEqual(phantom.phantom, 1)
        XCTAssertFalse(phantom.passed)

        let keyless = tally.count(clean + [line(nil)]).counts[.jobFinished]!
        XCTAssertEqual(keyless.unkeyed, 1)
        XCTAssertFalse(keyless.passed)
    }

    func testRepeatsAreNotCountedButMustNameSomethingRaised() {
        let tally = NemesisTally(expectation: expectation([.webhook: [("paid_not_credited:t1", 10)]]), windows: NemesisTally.Windows())
        let counted = tally.count([line("paid_not_credited:t1", .webhook), line("paid_not_credited:t1", .webhook, repeated: true)])
            .counts[.webhook]!
        XCTAssertEqual(counted.repeats, 1)
        XCTAssertTrue(counted.passed)
        let stray = tally.count([line("paid_not_credited:t1", .webhook), line("paid_not_credited:t7", .webhook, repeated: true)])
            .counts[.webhook]!
        XCTAssertEqual(stray.phantom, 1)
        XCTAssertFalse(stray.passed)
    }

    func testAKillExcusesOnlyWhatWasCommittedAroundIt() {
        var windows = NemesisTally.Windows()
        windows.kills = [(worker: 1, at: 50)]
        windows.killWindow = 6
        let tally = NemesisTally(expectation: expectation([
            .alertLine: [("paid_not_credited:t1", 47), ("paid_not_credited:t2", 80)],
            .webhook: [("paid_not_credited:t1", 47), ("paid_not_credited:t2", 80), ("paid_not_credited:t3", 45)],
        ]), windows: windows)
        // t1's line died with the worker (committed 3 s before its kill); t3's line was written
        // by the killed worker a second before the kill, its webhook call queued with it.
        let counts = tally.count([line("paid_not_credited:t2", .alertLine, at: 81), line("paid_not_credited:t3", .alertLine, at: 49, worker: 1),
                                  line("paid_not_credited:t2", .webhook, at: 81)]).counts
        XCTAssertEqual(counts[.alertLine]!.missingOwedByKilledWorkers, 1)
        XCTAssertEqual(counts[.alertLine]!.missing, 0)
        XCTAssertEqual(counts[.webhook]!.missingOwedByKilledWorkers, 2)
        XCTAssertTrue(counts[.webhook]!.passed)

        // Far from any kill, the same loss fails.
        let late = tally.count([line("paid_not_credited:t1", .alertLine, at: 47)]).counts
        XCTAssertEqual(late[.alertLine]!.missing, 1, "t2, committed 30 s after the kill")
    }

    func testALostTimelineExcusesARemadeAnnouncementWithTheSameKeyOnly() {
        var windows = NemesisTally.Windows()
        windows.lostTimelines = [NemesisTally.LostTimeline(from: 40, crashedAt: 49)]
        // t1 was credited on the lost timeline (announced at 45) and again after the crash
        // (its row is from 60); t2's row is from before the failover: a second line is a double.
        let tally = NemesisTally(expectation: expectation([.jobFinished: [("credited:t1", 60), ("credited:t2", 30)]]), windows: windows)
        let counted = tally.count([line("credited:t1", at: 45), line("credited:t1", at: 61),
                                   line("credited:t2", at: 31), line("credited:t2", at: 46)]).counts[.jobFinished]!
        XCTAssertEqual(counted.remadeAfterLostCommits, 1)
        XCTAssertEqual(counted.doubled, 1)
        XCTAssertEqual(counted.examples, ["doubled:credited:t2"])
        // Announced on the lost timeline and never made again: lost with it, not a phantom.
        let gone = tally.count([line("credited:t1", at: 61), line("credited:t2", at: 31), line("credited:t8", at: 44)]).counts[.jobFinished]!
        XCTAssertEqual(gone.lostWithTimeline, 1)
        XCTAssertTrue(gone.passed)
    }

    func testTamperingFailsTheCount() {
        var windows = NemesisTally.Windows()
        windows.kills = [(worker: 0, at: 10)]
        windows.killWindow = 6
        let tally = NemesisTally(expectation: expectation([.jobFinished: [("credited:t1", 8), ("credited:t2", 50)]]), windows: windows)
        let lines = [line("credited:t1", at: 8), line("credited:t2", at: 51, worker: 2)]
        for tampering in [NemesisTally.Tampering.double(.jobFinished), .drop(.jobFinished)] {
            let (counts, key) = tally.count(lines, tampering: tampering)
            // t1 sits in a kill's window, where a drop would be excused: t2 is the one tampered with.
            XCTAssertEqual(key, "credited:t2")
            XCTAssertFalse(counts[.jobFinished]!.passed, "\(tampering)")
        }
    }

    func testTheLogReaderTakesKeysAndRepeatsFromJSONLinesOnly() {
        let log = """
            {"ts":"2026-11-27T01:02:03.456Z","level":"info","event":"job_finished","announcement_key":"credited:nx-t1","job_id":1}
            {"ts":"2026-11-27T01:02:04.000Z","level":"error","event":"paid_not_credited","announcement_key":"paid_not_credited:nx-t49","repeat":true}
            {"ts":"2026-11-27T01:02:05.000Z","level":"info","event":"job_retry","job_id":2}
            Fatal error: not a JSON line
            {"ts":"2026-11-27T01:02:06.000Z","level":"info","event":"job_finished","job_id":3}
            """
        let read = NemesisLogReader.announcements(inLog: Data(log.utf8), worker: 2)
        XCTAssertEqual(read.map(\.stream), [.jobFinished, .alertLine, .jobFinished])
        XCTAssertEqual(read.map(\.key), ["credited:nx-t1", "paid_not_credited:nx-t49", nil])
        XCTAssertEqual(read.map(\.repeated), [false, true, false])
        XCTAssertEqual(read[0].at, 1_795_741_323.456, accuracy: 0.001)
        XCTAssertEqual(read[0].worker, 2)
    }

    func testTheScheduleCoversEveryKindFirstAndKeepsItsBoundsWhateverThePace() {
        let shape = NemesisSchedule.Shape(workers: 3, pace: 0.1, leaseSeconds: 6, callTimeout: 5)
        let faults = NemesisSchedule.make(seed: 7, count: 200, shape: shape)
        XCTAssertEqual(Set(faults.prefix(NemesisFaultKind.allCases.count).map(\.kind)), Set(NemesisFaultKind.allCases))
        for fault in faults {
            switch fault.kind {
            case .workerPausedPastLease: XCTAssertGreaterThan(fault.hold, shape.leaseSeconds)
            case .workerPause: XCTAssertLessThan(fault.hold, shape.leaseSeconds)
            case .syncStandbyHung: XCTAssertGreaterThan(fault.hold, shape.callTimeout)
            case .overlapping:
                XCTAssertEqual(fault.parts.count, 2)
                XCTAssertNotEqual(fault.parts[0].kind.overlapGroup, fault.parts[1].kind.overlapGroup)
                XCTAssertLessThan(fault.secondAfter, fault.parts[0].hold + 0.01, "the second starts while the first holds")
                if fault.parts.allSatisfy(\.kind.targetsWorker) { XCTAssertNotEqual(fault.parts[0].worker, fault.parts[1].worker) }
            default: break
            }
        }
        // The same seed, the same schedule, however long a run asks for.
        let shorter = NemesisSchedule.make(seed: 7, count: 20, shape: shape)
        XCTAssertEqual(shorter.map(\.kind), faults.prefix(20).map(\.kind))
        XCTAssertEqual(shorter.map(\.hold), faults.prefix(20).map(\.hold))
        XCTAssertEqual(shorter.map(\.worker), faults.prefix(20).map(\.worker))
        XCTAssertEqual(shorter.map(\.variant), faults.prefix(20).map(\.variant))
    }

    func testANegativeSeedOrPaceIsAnErrorNotACrash() async throws {
        for (numbers, decimals) in [(["seed": -1], [String: Double]()), ([:], ["pace": -0.5])] {
            let context = BenchContext(databaseURL: "", cluster: nil, migrator: nil, numbers: numbers, decimals: decimals,
                                       logger: Logger(minimumLevel: .error))
            do {
                _ = try await NemesisBenchmark(context: context).verdict()
                XCTFail("\(numbers) \(decimals) ran")
            } catch let error as WorkloadError {
                XCTAssertTrue("\(error)".contains(numbers.isEmpty ? "--pace" : "--seed"), "\(error)")
            }
        }
    }
}

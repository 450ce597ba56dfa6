import Foundation
import HTTP
import Observability

/// One nemesis run once everything is up: feed and faults side by side, drain, check, report.
struct NemesisRun: Sendable {
    let settings: NemesisBenchmark.Settings
    let targets: NemesisTargets

    /// Faults start after this much steady work.
    static let warmUp: Duration = .seconds(5)

    func run() async throws -> NemesisChecker.Verdict {
        try targets.fleet.startAll()
        let started = ContinuousClock.now
        let feedEnd = started + .seconds(settings.seconds)
        async let fed = targets.feeder.run(until: feedEnd)
        let (records, scheduleEnd) = try await breakThings(until: feedEnd, started: started)
        let feed = await fed

        try targets.simulator.setFaults(NemesisBenchmark.appleBackground)
        let drainDeadline = ContinuousClock.now + settings.drainLimit
        while ContinuousClock.now < drainDeadline, (try? await unfinished()) != 0 {
            try targets.fleet.restartExited()
            try await Task.sleep(for: .milliseconds(500))
        }
        let drained = (ContinuousClock.now - feedEnd).seconds
        // Deliveries still queued in a worker die with it: let the last ones arrive.
        await targets.webhook.waitUntilQuiet()
        let exits = await targets.fleet.stopAll()
        var windows = NemesisTally.Windows()
        let applied = records.flatMap { [$0] + $0.parts }
        windows.kills = applied.filter { $0.planned.kind == .workerKill }.map { ($0.planned.worker, $0.injectedAt.timeIntervalSince1970) }
        windows.killWindow = settings.callTimeout + 1
        windows.lostTimelines = applied.compactMap(\.lostTimeline)
        var checker = NemesisChecker(client: targets.database.client, feed: feed, simulator: targets.simulator,
                                     announcements: targets.fleet.loggedAnnouncements() + targets.webhook.received, windows: windows)
        checker.malformedWebhookCalls = targets.webhook.malformedCalls
        var verdict = try await checker.check()
        let times = try await checker.finishTimes()
        report(records, times: times, started: feed.startedAt)
        reportAnnouncements(verdict)
        let unrecovered = records.filter { NemesisTimeline.recovery(times, healedAt: $0.healedAt) == nil }.count
        // Every call has a deadline: after a standby is promoted, jobs finish again within the
        // call deadline + the connect deadline + 10 s.
        let failoverBound = settings.callTimeout + settings.connectTimeout + 10
        let slowFailovers = records.filter { record in
            record.failedOver && (NemesisTimeline.recovery(times, healedAt: record.healedAt) ?? .infinity) > failoverBound
        }.count
        let coverage = NemesisCoverage(kinds: settings.kinds, records: records, receiptsFed: feed.ordered.count + feed.lostOrder.count)
        BenchReport.line("nemesis", "schedule", [
            ("faults_applied", "\(records.count)"), ("next", scheduleEnd.next?.rawValue ?? "none"),
            ("next_needed_s", BenchReport.figure(scheduleEnd.needed)), ("left_s", BenchReport.figure(scheduleEnd.left)),
            ("kinds_never_applied", coverage.notReached.isEmpty ? "none" : coverage.notReached.map(\.rawValue).joined(separator: ",")),
        ])
        coverage.report()
        let passed = verdict.passed && unrecovered == 0 && slowFailovers == 0 && coverage.passed
        verdict.runPassed = passed
        verdict.coverage = coverage
        BenchReport.line("nemesis", "summary", [
            ("seed", "\(settings.seed)"), ("pace", BenchReport.figure(settings.pace)), ("faults", "\(records.count)"),
            ("faults_took_effect", "\(coverage.faultsInjected)"),
            ("coverage", coverage.passed ? "complete" : coverage.problems.joined(separator: "; ")),
            ("receipts", "\(feed.ordered.count + feed.lostOrder.count)"), ("credited_exactly_once", "\(verdict.creditedExactlyOnce)"),
            ("lost", "\(verdict.lost)"), ("credited_twice", "\(verdict.creditedTwice)"),
            ("settled_jobs_ran_again", "\(verdict.settledJobsRanAgain)"), ("refunds", "\(feed.refunded.count)"),
            ("refunds_not_applied", "\(verdict.refundsNotApplied)"),
            ("refunds_before_credit", "\(verdict.refundsBeforeCredit)"), ("unfinished", "\(verdict.unfinished)"),
            ("alerts_owed", "\(verdict.alertsOwed)"), ("alerts_missing", "\(verdict.alertsMissing)"),
            ("announcements_once", "\(verdict.total(\.once))"), ("announcements_missing", "\(verdict.total(\.missing))"),
            ("announcements_doubled", "\(verdict.total(\.doubled))"), ("announcements_phantom", "\(verdict.total(\.phantom))"),
            ("announcements_unkeyed", "\(verdict.total(\.unkeyed))"), ("webhook_calls_malformed", "\(verdict.malformedWebhookCalls)"),
            ("apple_paid_not_settled", "\(verdict.applePaidNotSettled)"),
            ("longest_no_finish_s", BenchReport.figure(verdict.longestNoFinish)), ("unrecovered_faults", "\(unrecovered)"),
            ("failovers_over_bound", "\(slowFailovers)"), ("failover_bound_s", BenchReport.figure(failoverBound)),
            ("feed_failed_batches", "\(feed.failedBatches)"), ("feed_resent_batches", "\(targets.feeder.log.resentBatches)"),
            ("drain_s", BenchReport.figure(drained)),
            ("worker_restarts", "\(targets.fleet.restarts)"), ("unexpected_exits", "\(targets.fleet.unexpectedExits)"),
            ("clean_shutdowns", "\(exits.clean)/\(exits.total)"), ("pass", passed ? "yes" : "no"),
            ("replay", "bench nemesis --seconds \(settings.seconds) --seed \(settings.seed) --pace \(BenchReport.figure(settings.pace))"
                + (settings.durable ? " --durable" : "")),
        ])
        return verdict
    }

    /// One line per stream of announcements: how each key was counted.
    private func reportAnnouncements(_ verdict: NemesisChecker.Verdict) {
        for stream in NemesisAnnouncement.Stream.allCases {
            let count = verdict.announcements[stream] ?? NemesisTally.Count()
            BenchReport.line("nemesis", "announcements", [
                ("stream", stream.rawValue), ("expected", "\(count.expected)"), ("once", "\(count.once)"),
                ("missing", "\(count.missing)"), ("owed_by_killed_workers", "\(count.missingOwedByKilledWorkers)"),
                ("doubled", "\(count.doubled)"), ("remade_after_lost_commits", "\(count.remadeAfterLostCommits)"),
                ("phantom", "\(count.phantom)"), ("lost_with_timeline", "\(count.lostWithTimeline)"),
                ("unkeyed", "\(count.unkeyed)"), ("repeats", "\(count.repeats)"),
                ("first_problems", count.examples.isEmpty ? "none" : count.examples.joined(separator: ",")),
            ])
        }
    }

    /// Where the schedule stopped: the fault that did not fit before the feed's end.
    struct ScheduleEnd: Sendable {
        var next: NemesisFaultKind?
        var needed = 0.0
        var left = 0.0
    }

    /// The schedule, one fault at a time, until the feed ends. A fault is only started when its
    /// hold fits before the end; the first that does not ends the schedule, and says so.
    private func breakThings(until end: ContinuousClock.Instant, started: ContinuousClock.Instant)
        async throws -> (records: [NemesisFaultRecord], end: ScheduleEnd) {
        try await calm(until: ContinuousClock.now + Self.warmUp, started: started)
        var records: [NemesisFaultRecord] = []
        var stop = ScheduleEnd()
        let shape = NemesisSchedule.Shape(workers: settings.workers, pace: settings.pace, leaseSeconds: settings.leaseSeconds,
                                          callTimeout: settings.callTimeout)
        for fault in NemesisSchedule.make(seed: settings.seed, count: 10_000, shape: shape, kinds: settings.kinds) {
            let needed = fault.hold + 2
            let left = (end - ContinuousClock.now).seconds
            guard needed < left else {
                stop = ScheduleEnd(next: fault.kind, needed: needed, left: max(0, left))
                break
            }
            Console.endProgress()
            let record = try await targets.apply(fault)
            records.append(record)
            try await calm(until: ContinuousClock.now + .milliseconds(Int(fault.calm * 1000)), started: started)
        }
        try await calm(until: end, started: started)
        Console.endProgress()
        return (records, stop)
    }

    /// Waits, restarting workers that died on their own and showing progress.
    private func calm(until end: ContinuousClock.Instant, started: ContinuousClock.Instant) async throws {
        while ContinuousClock.now < end {
            try targets.fleet.restartExited()
            let finished = (try? await targets.database.client.query(
                "SELECT count(*) FROM iap.jobs WHERE state IN ('done', 'failed', 'attention')")[0].decode(Int.self, at: 0)) ?? -1
            Console.progress("bench nemesis: \(Int((ContinuousClock.now - started).seconds))/\(settings.seconds)s finished=\(finished) primary=\(targets.set.primary)")
            try await Task.sleep(for: .milliseconds(500))
        }
    }

    /// Unfinished jobs, and refunds kept before their credit whose credit has landed (the
    /// leader's `refund_applier` revokes them within its interval).
    private func unfinished() async throws -> Int {
        try await targets.database.client.query("""
            SELECT (\(NemesisChecker.unfinishedJobsSQL))
                 + (SELECT count(*) FROM iap.refunds_before_credit r
                    WHERE r.applied_at IS NULL AND EXISTS (SELECT 1 FROM iap.credits c WHERE c.transaction_id = r.transaction_id))
            """)[0].decode(Int.self, at: 0)
    }

    /// One line per fault: when (seconds into the feed), held how long, recovered how fast.
    private func report(_ records: [NemesisFaultRecord], times: [Double], started: Date) {
        for (index, record) in records.enumerated() {
            let recovery = NemesisTimeline.recovery(times, healedAt: record.healedAt)
            var fields: [(String, String)] = [
                ("n", "\(index + 1)"), ("kind", record.planned.kind.rawValue),
                ("at_s", BenchReport.figure(record.injectedAt.timeIntervalSince(started))),
                ("held_s", BenchReport.figure(record.healedAt.timeIntervalSince(record.injectedAt))),
                ("recovered_after_s", recovery.map(BenchReport.figure) ?? "never"),
                ("stall_s", BenchReport.figure(NemesisTimeline.stall(times, injectedAt: record.injectedAt, healedAt: record.healedAt))),
            ]
            if record.planned.kind.targetsWorker { fields.insert(("worker", "\(record.planned.worker)"), at: 2) }
            BenchReport.line("nemesis", "fault", fields + record.note)
        }
    }
}

import AppleSim
import EmbeddedPostgres
import Foundation
import HTTP
import Postgres

/// Everything the nemesis can break: the replica set, the fault proxies the workers reach
/// each slot through, the workers, and Apple.
struct NemesisTargets: Sendable {
    let set: PrivateReplicaSet
    /// One per slot (index = slot), so the workers' multi-host URL survives failovers.
    let proxies: [FaultProxy]
    let fleet: NemesisFleet
    let simulator: AppleSimulator
    let database: NemesisDatabase
    /// The alert webhook's receiver.
    let webhook: NemesisWebhookReceiver
    /// The web tier, which sends again what a failover may have lost.
    let feeder: NemesisFeeder
    /// Apple's faults between the nemesis's own.
    let appleBackground: AppleSimFaults
    /// How long a failover waits for the fleet to finish a job on the new primary before the
    /// old primary's slot is rebuilt anyway.
    let failoverPatience: Duration
}

/// A fault as it happened: wall-clock times, to set against the jobs' `finished_at`.
struct NemesisFaultRecord: Sendable {
    let planned: NemesisPlannedFault
    let injectedAt: Date
    let healedAt: Date
    /// Whether it found something to break: a running worker, open connections, requests to Apple, ...
    var tookEffect = true
    /// What else is worth printing (the evidence that it took effect, the failover's rebuild time).
    var note: [(String, String)] = []
    /// A failover that lost commits: what was announced on the lost timeline may be announced
    /// again, with the same key, once made again.
    var lostTimeline: NemesisTally.LostTimeline?
    /// The standby was promoted: jobs must finish again within the failover bound.
    var failedOver = false
    /// An overlapping fault's two records.
    var parts: [NemesisFaultRecord] = []
}

extension NemesisTargets {
    /// Injects `fault`, holds it, heals it; returns once healed (a failover: once the standby
    /// is promoted, the old primary fenced and a new standby streaming).
    func apply(_ fault: NemesisPlannedFault) async throws -> NemesisFaultRecord {
        let injectedAt = Date()
        let hold = Duration.milliseconds(Int(fault.hold * 1000))
        var tookEffect = true
        var note: [(String, String)] = []
        switch fault.kind {
        case .workerKill:
            tookEffect = fleet.kill(fault.worker)
            try await Task.sleep(for: hold)
            try fleet.restart(fault.worker)
        case .workerPause:
            tookEffect = fleet.signal(fault.worker, SIGSTOP)
            try await Task.sleep(for: hold)
            fleet.signal(fault.worker, SIGCONT)
        case .workerPausedPastLease:
            let leased = try await stopHoldingJobs(fault.worker)
            tookEffect = leased > 0
            try await Task.sleep(for: hold)
            fleet.signal(fault.worker, SIGCONT)
            note = [("jobs_leased", "\(leased)")]
        case .connectionsFrozen:
            let proxy = proxies[set.primary.rawValue]
            let frozen = proxy.freezeOpenConnections()
            (tookEffect, note) = (frozen > 0, [("connections", "\(frozen)")])
            try await Task.sleep(for: hold)
            proxy.resetConnections()
        case .connectionsReset:
            let until = ContinuousClock.now + hold
            var reset = 0
            while ContinuousClock.now < until {
                reset += proxies[set.primary.rawValue].resetConnections(fraction: 0.5)
                try await Task.sleep(for: .milliseconds(200))
            }
            (tookEffect, note) = (reset > 0, [("connections", "\(reset)")])
        case .lostCommitReply:
            let proxy = proxies[set.primary.rawValue]
            let before = proxy.commitRepliesCut
            // About one cut a second: the fleet keeps committing between them.
            proxy.cutCommitReplies(max(1, Int(fault.hold.rounded())))
            try await Task.sleep(for: hold)
            proxy.cutCommitReplies(0)
            let cut = proxy.commitRepliesCut - before
            (tookEffect, note) = (cut > 0, [("commit_replies_cut", "\(cut)")])
        case .postgresRestart:
            try await set.restartPrimary()
        case .primaryCrash:
            set.crashPrimary()
            try await Task.sleep(for: hold)
            try await set.startCrashedPrimary()
        case .primaryHungFailover:
            return try await failOver(fault, injectedAt: injectedAt, hold: hold)
        case .asyncStandbyLostCommits:
            return try await loseCommits(fault, injectedAt: injectedAt, hold: hold)
        case .syncStandbyHung:
            return try await hangStandby(fault, injectedAt: injectedAt, hold: hold)
        case .appleOutage:
            let before = simulator.stats.byResult["outage"] ?? 0
            simulator.startOutage(for: hold)
            try await Task.sleep(for: hold)
            let refused = (simulator.stats.byResult["outage"] ?? 0) - before
            (tookEffect, note) = (refused > 0, [("requests_refused", "\(refused)")])
        case .appleHang:
            let before = simulator.stats.byResult["hang"] ?? 0
            var hanging = appleBackground
            hanging.hangRate = 0.5
            try simulator.setFaults(hanging)
            try await Task.sleep(for: hold)
            try simulator.setFaults(appleBackground)
            let hung = (simulator.stats.byResult["hang"] ?? 0) - before
            (tookEffect, note) = (hung > 0, [("requests_hung", "\(hung)")])
        case .overlapping:
            return try await overlap(fault, injectedAt: injectedAt)
        }
        return NemesisFaultRecord(planned: fault, injectedAt: injectedAt, healedAt: Date(), tookEffect: tookEffect, note: note)
    }

    /// The first part, and the second from `secondAfter` on; healed when both are. It took
    /// effect when both did and the second began before the first was healed.
    private func overlap(_ fault: NemesisPlannedFault, injectedAt: Date) async throws -> NemesisFaultRecord {
        let (first, second) = (fault.parts[0], fault.parts[1])
        async let firstRecord = apply(first)
        async let secondRecord: NemesisFaultRecord = {
            try await Task.sleep(for: .milliseconds(Int(fault.secondAfter * 1000)))
            return try await apply(second)
        }()
        let records = try await [firstRecord, secondRecord]
        let overlapped = records[1].injectedAt < records[0].healedAt
        var note: [(String, String)] = [("parts", "\(first.kind.rawValue)+\(second.kind.rawValue)"),
                                        ("overlapped_s", BenchReport.figure(max(0, records[0].healedAt.timeIntervalSince(records[1].injectedAt))))]
        for (index, record) in records.enumerated() {
            if record.planned.kind.targetsWorker { note.append(("worker_\(index + 1)", "\(record.planned.worker)")) }
            note += record.note.map { ("\($0.0)_\(index + 1)", $0.1) }
        }
        return NemesisFaultRecord(planned: fault, injectedAt: injectedAt, healedAt: max(records[0].healedAt, records[1].healedAt),
                                  tookEffect: records.allSatisfy(\.tookEffect) && overlapped, note: note, parts: records)
    }

    /// Hang, promote, fence; healed at the promotion. Then the fenced slot is rebuilt as the
    /// standby (synchronous again), so the next failover has somewhere to go.
    private func failOver(_ fault: NemesisPlannedFault, injectedAt: Date, hold: Duration) async throws -> NemesisFaultRecord {
        let old = set.primary
        set.hangPrimary()
        try await Task.sleep(for: hold)
        try await set.promoteStandby()
        let healedAt = Date()
        try await set.fenceOldPrimary()
        await database.drop(old)
        // Rebuilding kills the hung processes, and the kernel then answers for them (RST,
        // refused): a hung host would become a crashed one. The fleet must find the new
        // primary while the old one still hangs; the slot is rebuilt after that, or after the
        // patience runs out.
        let recovered = try await waitForAFinishedJob(after: healedAt)
        let rebuilding = ContinuousClock.now
        try await set.rebuildStandby()
        return NemesisFaultRecord(planned: fault, injectedAt: injectedAt, healedAt: healedAt,
                                  note: [("primary", "\(set.primary)"), ("fleet_found_new_primary", recovered ? "yes" : "no"),
                                         ("rebuild_s", BenchReport.figure((ContinuousClock.now - rebuilding).seconds))],
                                  failedOver: true)
    }

    /// The standby made asynchronous and its link frozen while the fleet commits on the
    /// primary; then the primary crashes and the standby is promoted without those commits.
    /// Took effect when the new primary has fewer finished jobs than the old one had. The lost
    /// timeline starts when the standby stopped being waited for: what it had not received by
    /// the freeze is lost too.
    private func loseCommits(_ fault: NemesisPlannedFault, injectedAt: Date, hold: Duration) async throws -> NemesisFaultRecord {
        let old = set.primary
        try await set.setSynchronous(false)
        // Every backend applies the reload before its next commit; give them a moment to.
        try await Task.sleep(for: .milliseconds(300))
        set.freezeReplication()
        try await Task.sleep(for: hold)
        let finishedOnOld = try? await finishedJobs(on: database.client(old))
        let crashedAt = Date()
        let promotedAt = try await crashAndPromote()
        // The fleet finishes jobs on the new primary at once: only what finished before the crash compares.
        let finishedOnNew = try? await finishedJobs(on: database.client, before: crashedAt)
        let lost = (finishedOnOld ?? 0) - (finishedOnNew ?? .max)
        let recovered = try await resendAndRebuild(since: injectedAt, promotedAt: promotedAt)
        return NemesisFaultRecord(planned: fault, injectedAt: injectedAt, healedAt: promotedAt, tookEffect: lost > 0,
                                  note: [("primary", "\(set.primary)"), ("finished_jobs_lost", "\(lost)"),
                                         ("fleet_found_new_primary", recovered ? "yes" : "no")],
                                  lostTimeline: NemesisTally.LostTimeline(from: injectedAt.timeIntervalSince1970,
                                                                          crashedAt: crashedAt.timeIntervalSince1970),
                                  failedOver: true)
    }

    /// The synchronous standby's link frozen past the workers' call deadline: their COMMITs
    /// wait for it. Healed by thawing the link (variant false), or by crashing the primary and
    /// promoting that standby (true): a COMMIT still waiting was never acknowledged, so
    /// nothing it did may have been announced. Took effect when COMMITs were seen waiting.
    private func hangStandby(_ fault: NemesisPlannedFault, injectedAt: Date, hold: Duration) async throws -> NemesisFaultRecord {
        let old = set.primary
        set.freezeReplication()
        let until = ContinuousClock.now + hold
        var waiting = 0
        while ContinuousClock.now < until {
            waiting = max(waiting, (try? await commitsWaitingForStandby(on: database.client(old))) ?? 0)
            try await Task.sleep(for: .milliseconds(250))
        }
        var note: [(String, String)] = [("commits_waiting", "\(waiting)"), ("healed_by", fault.variant ? "failover" : "standby_back")]
        guard fault.variant else {
            set.thawReplication()
            return NemesisFaultRecord(planned: fault, injectedAt: injectedAt, healedAt: Date(), tookEffect: waiting > 0, note: note)
        }
        let promotedAt = try await crashAndPromote()
        let recovered = try await resendAndRebuild(since: injectedAt, promotedAt: promotedAt)
        note += [("primary", "\(set.primary)"), ("fleet_found_new_primary", recovered ? "yes" : "no")]
        return NemesisFaultRecord(planned: fault, injectedAt: injectedAt, healedAt: promotedAt, tookEffect: waiting > 0, note: note,
                                  failedOver: true)
    }

    /// The primary crashed, its standby (its link thawed first) promoted, the old one fenced.
    /// Returns when the standby was promoted.
    private func crashAndPromote() async throws -> Date {
        let old = set.primary
        set.crashPrimary()
        set.thawReplication()
        try await set.promoteStandby()
        let promotedAt = Date()
        try await set.fenceOldPrimary()
        await database.drop(old)
        return promotedAt
    }

    /// After a failover that lost commits: the web tier's writes since `injectedAt` are gone too
    /// and sent again, as the apps would; the fenced slot is rebuilt as the standby once the fleet
    /// finished a job on the new primary. Returns whether it did.
    private func resendAndRebuild(since injectedAt: Date, promotedAt: Date) async throws -> Bool {
        await feeder.resend(since: injectedAt.addingTimeInterval(-1))
        let recovered = try await waitForAFinishedJob(after: promotedAt)
        try await set.rebuildStandby()
        return recovered
    }

    private func finishedJobs(on client: PostgresClient, before instant: Date = .distantFuture) async throws -> Int {
        try await client.query("SELECT count(*) FROM iap.jobs WHERE finished_at < to_timestamp($1)",
                               [min(instant.timeIntervalSince1970, 1e10)])[0].decode(Int.self, at: 0)
    }

    private func commitsWaitingForStandby(on client: PostgresClient) async throws -> Int {
        try await client.query("SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'")[0].decode(Int.self, at: 0)
    }

    /// SIGSTOPs the worker in slot `index` at a moment it holds jobs (only those have leases to
    /// lose): stopped, then counted; resumed and tried again while it holds none, for up to 5 s.
    /// Returns how many it held (0: it stays stopped anyway).
    private func stopHoldingJobs(_ index: Int) async throws -> Int {
        let deadline = ContinuousClock.now + .seconds(5)
        while true {
            guard fleet.signal(index, SIGSTOP) else { return 0 }
            let leased = try await jobsLeased(toWorker: index)
            if leased > 0 || ContinuousClock.now > deadline { return leased }
            fleet.signal(index, SIGCONT)
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Jobs running under a lease of the worker in slot `index` (a worker id holds its pid).
    private func jobsLeased(toWorker index: Int) async throws -> Int {
        guard let pid = fleet.pid(index) else { return 0 }
        return try await database.client.query("""
            SELECT count(*) FROM iap.jobs WHERE state = 'running' AND leased_by LIKE '%:' || $1 || ':%'
            """, ["\(pid)"])[0].decode(Int.self, at: 0)
    }

    private func waitForAFinishedJob(after instant: Date) async throws -> Bool {
        let deadline = ContinuousClock.now + failoverPatience
        while ContinuousClock.now < deadline {
            let finished = try? await database.client.query("SELECT count(*) FROM iap.jobs WHERE finished_at > to_timestamp($1)",
                                                             [instant.timeIntervalSince1970])[0].decode(Int.self, at: 0)
            if let finished, finished > 0 { return true }
            try fleet.restartExited()
            try await Task.sleep(for: .milliseconds(200))
        }
        return false
    }
}

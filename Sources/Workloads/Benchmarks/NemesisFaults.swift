import AppleSim
import EmbeddedPostgres
import Foundation
import HTTP

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
        case .postgresRestart:
            try await set.restartPrimary()
        case .primaryHungFailover:
            return try await failOver(fault, injectedAt: injectedAt, hold: hold)
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
        }
        return NemesisFaultRecord(planned: fault, injectedAt: injectedAt, healedAt: Date(), tookEffect: tookEffect, note: note)
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
                                         ("rebuild_s", BenchReport.figure((ContinuousClock.now - rebuilding).seconds))])
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

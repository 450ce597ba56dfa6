import AppleSim
/// The faults `bench nemesis` throws at the fleet, one at a time (or two at once), as Jepsen's nemesis does.
enum NemesisFaultKind: String, Sendable, CaseIterable {
    /// SIGKILL of one worker, restarted when healed.
    case workerKill = "worker_kill"
    /// SIGSTOP of one worker for less than its lease, SIGCONT when healed.
    case workerPause = "worker_pause"
    /// SIGSTOP of one worker holding jobs, for longer than its lease: the leader gives its jobs
    /// to others, and its results are stale when it wakes.
    case workerPausedPastLease = "worker_paused_past_lease"
    /// Every connection open to the primary goes silent (no FIN, no RST); reset when healed.
    case connectionsFrozen = "connections_frozen"
    /// Half of the connections to the primary reset, every 200 ms, for the whole hold.
    case connectionsReset = "connections_reset"
    /// The primary's COMMIT replies to the workers are lost: the connection is reset right
    /// before the server's `CommandComplete "COMMIT"` reaches the worker.
    case lostCommitReply = "lost_commit_reply"
    /// `pg_ctl restart -m fast` of the primary.
    case postgresRestart = "postgres_restart"
    /// SIGKILL of every process of the primary, as a host losing power; started again when
    /// healed (crash recovery).
    case primaryCrash = "primary_crash"
    /// The primary hangs; healed by promoting the standby and fencing the old primary, which
    /// is then rebuilt as the new standby.
    case primaryHungFailover = "primary_hung_failover"
    /// The standby made asynchronous and cut off while the primary commits on; then the primary
    /// crashes and the standby is promoted without those commits. What was lost is made again
    /// (the lost feed sent again by the web tier), and must be announced with the same keys.
    case asyncStandbyLostCommits = "async_standby_lost_commits"
    /// The synchronous standby stops answering for longer than the workers' call deadline, so
    /// COMMITs wait for it; healed by its coming back, or by the primary crashing and that
    /// standby being promoted.
    case syncStandbyHung = "sync_standby_hung"
    /// Apple answers 503 to everything.
    case appleOutage = "apple_outage"
    /// Half of Apple's requests never answer.
    case appleHang = "apple_hang"
    /// Two faults of different kinds at once, the second injected while the first holds.
    case overlapping

    /// How long the fault is held before it is healed, in seconds, before the pace scales it.
    var hold: ClosedRange<Double> {
        switch self {
        case .workerKill: 1...3
        case .workerPause: 3...6
        case .connectionsFrozen: 4...8
        case .connectionsReset, .appleOutage, .appleHang: 3...6
        case .lostCommitReply: 3...6
        case .postgresRestart: 0...0
        case .primaryCrash: 1...3
        case .primaryHungFailover: 3...3
        case .asyncStandbyLostCommits: 2...4
        // Set by the lease and the call deadline instead (`NemesisSchedule.hold`).
        case .workerPausedPastLease, .syncStandbyHung, .overlapping: 0...0
        }
    }

    /// The kinds a run draws from unless told otherwise.
    ///
    /// `asyncStandbyLostCommits` is left out until a run with it comes out clean: it found a
    /// promoted standby handing lost jobs' ids to new jobs while a worker kept a payload for a
    /// retry under such an id, which credited the old receipt to the new job's buyer
    /// (`PayloadCache` now holds an entry only for the sessions it was filled on).
    static let scheduled = allCases.filter { $0 != .asyncStandbyLostCommits }

    /// Faults aimed at one worker.
    var targetsWorker: Bool { self == .workerKill || self == .workerPause || self == .workerPausedPastLease }

    /// What an overlapping fault combines: short faults of different groups (two faults of
    /// the replica set at once would fight over it).
    var overlapGroup: Int? {
        switch self {
        case .workerKill, .workerPause: 0
        case .connectionsFrozen, .connectionsReset, .lostCommitReply: 1
        case .postgresRestart, .primaryCrash: 2
        case .appleOutage, .appleHang: 3
        default: nil
        }
    }
}

/// One planned fault: what, at whom, held how long, then how long a calm before the next.
struct NemesisPlannedFault: Sendable {
    let kind: NemesisFaultKind
    let worker: Int
    let hold: Double
    let calm: Double
    /// A coin for faults healed in one of two ways (`syncStandbyHung`: failover when true).
    var variant = false
    /// `overlapping`: the two faults, and how long after the first the second starts.
    var parts: [NemesisPlannedFault] = []
    var secondAfter = 0.0
}

/// A schedule from a seed alone: the same seed (with the same workers, pace, lease and call
/// deadline) gives the same faults, targets, holds and calms. Every kind appears once, in a
/// seeded order, before any repeats, so a short run still covers them all.
enum NemesisSchedule {
    struct Shape: Sendable {
        var workers = 3
        var pace = 1.0
        var leaseSeconds = 10.0
        var callTimeout = 30.0
    }

    static func make(seed: UInt64, count: Int, shape: Shape,
                     kinds chosen: [NemesisFaultKind] = NemesisFaultKind.allCases) -> [NemesisPlannedFault] {
        var random = NemesisRandom(seed: seed)
        var kinds = chosen
        for index in stride(from: kinds.count - 1, to: 0, by: -1) {
            kinds.swapAt(index, Int(random.next() % UInt64(index + 1)))
        }
        // Planned one by one, so a schedule is the start of any longer one from the same seed.
        return (0..<(chosen.isEmpty ? 0 : count)).map { index in
            let kind = index < kinds.count ? kinds[index] : chosen[Int(random.next() % UInt64(chosen.count))]
            return plan(kind, shape: shape, random: &random)
        }
    }

    private static func plan(_ kind: NemesisFaultKind, shape: Shape, random: inout NemesisRandom) -> NemesisPlannedFault {
        let worker = Int(random.next() % UInt64(max(1, shape.workers)))
        let hold = hold(kind, shape: shape, random: &random)
        let calm = random.uniform(2...4) * shape.pace
        let variant = random.next() % 2 == 1
        guard kind == .overlapping else {
            return NemesisPlannedFault(kind: kind, worker: worker, hold: hold, calm: calm, variant: variant)
        }
        let simple = NemesisFaultKind.allCases.filter { $0.overlapGroup != nil }
        let first = simple[Int(random.next() % UInt64(simple.count))]
        let others = simple.filter { $0.overlapGroup != first.overlapGroup }
        let second = others[Int(random.next() % UInt64(others.count))]
        let parts = [first, second].enumerated().map { index, part in
            // Two workers faulted at once are two different workers.
            NemesisPlannedFault(kind: part, worker: (worker + index) % max(1, shape.workers),
                                hold: self.hold(part, shape: shape, random: &random), calm: 0)
        }
        let secondAfter = (parts[0].hold * random.uniform(0.2...0.6) * 10).rounded() / 10
        return NemesisPlannedFault(kind: kind, worker: worker, hold: max(parts[0].hold, secondAfter + parts[1].hold), calm: calm,
                                   parts: parts, secondAfter: secondAfter)
    }

    /// Seconds: the kind's range scaled by the pace, except where the fault is only itself past
    /// a bound the pace must not shrink (a lease, a call deadline).
    private static func hold(_ kind: NemesisFaultKind, shape: Shape, random: inout NemesisRandom) -> Double {
        switch kind {
        case .workerPause: min(random.uniform(kind.hold) * shape.pace, shape.leaseSeconds * 0.6)
        case .workerPausedPastLease: shape.leaseSeconds + random.uniform(2...5)
        case .syncStandbyHung: shape.callTimeout + random.uniform(1...3)
        default: random.uniform(kind.hold) * shape.pace
        }
    }
}

/// apple-sim's seeded generator: the same schedule from the same seed on every machine.
struct NemesisRandom {
    private var source: SimRandom

    init(seed: UInt64) { source = SimRandom(seed: seed) }

    mutating func next() -> UInt64 { source.next() }

    /// Uniform in `range`, rounded to a tenth of a second (the schedule prints them).
    mutating func uniform(_ range: ClosedRange<Double>) -> Double {
        ((range.lowerBound + source.unit() * (range.upperBound - range.lowerBound)) * 10).rounded() / 10
    }
}

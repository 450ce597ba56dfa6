import AppleSim
/// The faults `bench nemesis` throws at the fleet, one at a time, as Jepsen's nemesis does.
enum NemesisFaultKind: String, Sendable, CaseIterable {
    /// SIGKILL of one worker, restarted when healed.
    case workerKill = "worker_kill"
    /// SIGSTOP of one worker (past its leases, sometimes), SIGCONT when healed.
    case workerPause = "worker_pause"
    /// Every connection open to the primary goes silent (no FIN, no RST); reset when healed.
    case connectionsFrozen = "connections_frozen"
    /// Half of the connections to the primary reset, every 200 ms, for the whole hold.
    case connectionsReset = "connections_reset"
    /// `pg_ctl restart -m fast` of the primary.
    case postgresRestart = "postgres_restart"
    /// The primary hangs; healed by promoting the standby and fencing the old primary, which
    /// is then rebuilt as the new standby.
    case primaryHungFailover = "primary_hung_failover"
    /// Apple answers 503 to everything.
    case appleOutage = "apple_outage"
    /// Half of Apple's requests never answer.
    case appleHang = "apple_hang"

    /// How long the fault is held before it is healed, in seconds.
    var hold: ClosedRange<Double> {
        switch self {
        case .workerKill: 1...3
        case .workerPause: 3...14
        case .connectionsFrozen: 4...8
        case .connectionsReset: 3...6
        case .postgresRestart: 0...0
        case .primaryHungFailover: 3...3
        case .appleOutage: 3...6
        case .appleHang: 3...6
        }
    }

    /// Faults aimed at one worker.
    var targetsWorker: Bool { self == .workerKill || self == .workerPause }
}

/// One planned fault: what, at whom, held how long, then how long a calm before the next.
struct NemesisPlannedFault: Sendable {
    let kind: NemesisFaultKind
    let worker: Int
    let hold: Double
    let calm: Double
}

/// A schedule from a seed alone: the same seed gives the same faults, targets, holds and calms.
/// Every kind appears once, in a seeded order, before any repeats, so a short run still
/// covers them all.
enum NemesisSchedule {
    static func make(seed: UInt64, workers: Int, count: Int, pace: Double = 1,
                     kinds chosen: [NemesisFaultKind] = NemesisFaultKind.allCases) -> [NemesisPlannedFault] {
        var random = NemesisRandom(seed: seed)
        var kinds = chosen
        for index in stride(from: kinds.count - 1, to: 0, by: -1) {
            kinds.swapAt(index, Int(random.next() % UInt64(index + 1)))
        }
        while kinds.count < count, !chosen.isEmpty {
            kinds.append(chosen[Int(random.next() % UInt64(chosen.count))])
        }
        return kinds.prefix(count).map { kind in
            NemesisPlannedFault(kind: kind, worker: Int(random.next() % UInt64(workers)),
                                hold: random.uniform(kind.hold) * pace, calm: random.uniform(2...4) * pace)
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

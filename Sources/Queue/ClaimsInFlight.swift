/// The claim loop's bookkeeping (held under the worker's lock): claims run side by side, each
/// on its own connection, so that the next batch is claimed while the last one's rows are still
/// on their way; one claim at a time would make the claim statement the drain's critical path. A
/// claim reserves the slots it asks for until its jobs have started.
struct ClaimsInFlight {
    /// One planned claim: how many jobs it asks for, whether it hands back orphaned leases, and
    /// the half of the ready set it takes from first (`QueueStore.claimSQLByHalf`).
    struct Claim: Sendable, Equatable {
        let limit: Int
        let handingBack: Bool
        var half = 0
    }

    /// Claims at once (`QueueConfiguration.claimConcurrency`).
    let most: Int
    let batch: Int
    let concurrency: Int
    private(set) var running = 0
    /// Claims in flight by the half of the ready set they start in. Two side by side start in
    /// different halves, so neither passes over the rows the other holds locked; one claim at a
    /// time alternates, so neither half waits for the other to empty.
    private var startingIn = [0, 0]
    private var lastHalf = 1
    /// Slots asked for by the claims in flight, not yet counted as verifying or held.
    private(set) var reserved = 0
    /// The last claim came back full: more jobs wait.
    private(set) var backlog = false
    /// The next claim hands back every lease of this worker id it does not hold (a reply was
    /// lost). It runs alone: a claim in flight beside it holds leases the worker does not know yet.
    var handBackDue = false
    /// A claim that hands back is in flight: nothing starts beside it.
    private var handingBack = false
    private var failureBackoff = 0.1
    /// Failed claims waiting out their backoff: no other starts meanwhile (the database is
    /// likely down for it too).
    private var backingOff = 0

    init(most: Int, batch: Int, concurrency: Int) {
        self.most = max(1, most)
        self.batch = max(1, batch)
        self.concurrency = concurrency
    }

    /// Slots a claim may take now, or 0, from the slots free for verifying and for holding
    /// (`QueueWorker.freeSlots`) less what claims in flight reserved. While a backlog waits and
    /// results being written are what holds the slots, only half a batch or more is worth a
    /// claim: each costs a statement and a commit whatever its size, and completions free slots
    /// a few hundred at a time. Slots freed by verifications that ended (Apple answering) are
    /// claimed as they come, so the verifications in flight stay near `concurrency`.
    func slots(verifying: Int, writing: Int) -> Int {
        guard running < most, !handingBack, backingOff == 0, !(handBackDue && running > 0) else { return 0 }
        let (verifying, writing) = (verifying - reserved, writing - reserved)
        let slots = min(verifying, writing, batch)
        // A claim beside another is worth it only for a whole batch: the two scan the same rows.
        if running > 0 { return slots == batch ? slots : 0 }
        let worthwhile = max(1, min(batch, concurrency) / 2)
        return slots >= (backlog && writing < verifying ? worthwhile : 1) ? slots : 0
    }

    /// Starts a claim of `slots(…)` jobs, or nil when none is due.
    mutating func begin(verifying: Int, writing: Int) -> Claim? {
        let limit = slots(verifying: verifying, writing: writing)
        guard limit > 0 else { return nil }
        running += 1
        reserved += limit
        handingBack = handBackDue
        handBackDue = false
        let half = startingIn[0] == startingIn[1] ? 1 - lastHalf : (startingIn[0] < startingIn[1] ? 0 : 1)
        startingIn[half] += 1
        lastHalf = half
        return Claim(limit: limit, handingBack: handingBack, half: half)
    }

    /// The claim came back with `claimed` jobs, already started.
    mutating func succeeded(_ claim: Claim, claimed: Int) {
        release(claim)
        backlog = claimed == claim.limit
        failureBackoff = 0.1
    }

    /// The claim failed: how long it waits before its turn is given back (doubling to 5 s).
    mutating func failed(_ claim: Claim, connectionLost: Bool) -> Double {
        if connectionLost || claim.handingBack { handBackDue = true }
        backingOff += 1
        defer { failureBackoff = min(failureBackoff * 2, 5) }
        return failureBackoff
    }

    /// A failed claim's wait is over.
    mutating func end(_ claim: Claim) {
        backingOff -= 1
        release(claim)
    }

    /// A claim in flight no longer: its turn and its reserved slots given back.
    private mutating func release(_ claim: Claim) {
        if claim.handingBack { handingBack = false }
        running -= 1
        reserved -= claim.limit
        startingIn[claim.half] -= 1
    }
}

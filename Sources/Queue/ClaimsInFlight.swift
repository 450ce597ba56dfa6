import Synchronization

/// The claim loop's bookkeeping (held under the worker's lock): claims run side by side, each
/// on its own connection, so that the next batch is claimed while the last one's rows are still
/// on their way; one claim at a time would make the claim statement the drain's critical path. A
/// claim reserves the slots it asks for until its jobs have started.
struct ClaimsInFlight {
    /// One planned claim: how many jobs it asks for, whether it hands back orphaned leases, and
    /// the half of the ready set it takes from first (`QueueStore.claimSQLByHalf`), or nil for the
    /// whole set in order (`QueueStore.claimSQL`).
    struct Claim: Sendable, Equatable {
        let limit: Int
        let handingBack: Bool
        var half: Int? = nil
    }

    /// Claims at once (`QueueConfiguration.claimConcurrency`).
    let most: Int
    let batch: Int
    let concurrency: Int
    private(set) var running = 0
    /// Claims in flight by the half of the ready set they start in. A claim that begins alone
    /// reads the whole set in order; one that begins beside others starts in the half fewer of
    /// them are in, so two side by side do not pass over the rows each other holds locked.
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
        return Claim(limit: limit, handingBack: handingBack, half: running > 1 ? takeHalf() : nil)
    }

    /// The half fewer claims in flight start in (the other of the last one taken on a tie), now counted.
    private mutating func takeHalf() -> Int {
        let half = startingIn[0] == startingIn[1] ? 1 - lastHalf : (startingIn[0] < startingIn[1] ? 0 : 1)
        startingIn[half] += 1
        lastHalf = half
        return half
    }

    /// The next claim sent on `claim`'s own connection the moment its reply is in, before its
    /// jobs are held (`QueueWorker.claimAhead`): when it came back full, no hand-back is due or
    /// running, and a whole batch of slots is free beside the ones it reserved. It takes over the
    /// turn `claim` ends, so it starts beside the claims in flight whatever `most` is.
    mutating func chain(after claim: Claim, claimed: Int, verifying: Int, writing: Int) -> Claim? {
        guard claimed == claim.limit, claim.limit == batch, !handBackDue, !handingBack, backingOff == 0,
              min(verifying, writing) - reserved >= batch else { return nil }
        running += 1
        reserved += batch
        // The lane keeps its half, so the claims beside it keep theirs; a lane that began alone
        // takes one now if others run beside it (`claim` itself is still counted in `running`).
        let half: Int?
        if let own = claim.half {
            startingIn[own] += 1
            half = own
        } else {
            half = running > 2 ? takeHalf() : nil
        }
        return Claim(limit: batch, handingBack: false, half: half)
    }

    /// A claim reserved by `chain` whose reply will never be read (the connection it may have
    /// been sent on broke): its turn and slots given back, and the leases it may have taken handed
    /// back by the next claim. (One reserved and surely not sent runs as a claim of its own.)
    mutating func abandon(_ claim: Claim) {
        handBackDue = true
        release(claim)
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
        if let half = claim.half { startingIn[half] -= 1 }
    }
}

/// The claim `QueueWorker.claimAhead` reserved on a connection's thread, until the task whose
/// claim it follows takes it.
final class AheadClaim: Sendable {
    private let claim = Mutex<ClaimsInFlight.Claim?>(nil)

    func put(_ claim: ClaimsInFlight.Claim) { self.claim.withLock { $0 = claim } }
    func take() -> ClaimsInFlight.Claim? { claim.withLock { $0.take() } }
}

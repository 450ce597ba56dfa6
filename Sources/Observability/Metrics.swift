import Synchronization

/// A monotonically increasing value (one label combination of a `CounterFamily`).
public final class Counter: Sendable {
    private let storage = AtomicDouble()

    init() {}

    public func inc() { storage.add(1) }

    /// Negative and NaN amounts are ignored: a counter only goes up.
    public func add(_ amount: Double) {
        guard amount > 0 else { return }
        storage.add(amount)
    }

    public var value: Double { storage.load() }
}

/// A value that goes up and down (one label combination of a `GaugeFamily`).
public final class Gauge: Sendable {
    private let storage = AtomicDouble()

    init() {}

    public func set(_ value: Double) { storage.store(value) }
    public func inc() { storage.add(1) }
    public func dec() { storage.add(-1) }
    public func add(_ delta: Double) { storage.add(delta) }

    public var value: Double { storage.load() }
}

/// Distribution of observations in fixed buckets (one label combination of a `HistogramFamily`).
public final class Histogram: Sendable {
    /// Finite, strictly increasing upper bounds; `+Inf` is implicit.
    public let upperBounds: [Double]
    // A lock (not atomics) so render sees bucket counts, sum and count from the same instant.
    private let state: Mutex<Snapshot>

    struct Snapshot {
        var bucketCounts: [UInt64]  // not cumulative; last slot is the +Inf overflow
        var sum: Double = 0
        var count: UInt64 = 0
    }

    init(upperBounds: [Double]) {
        self.upperBounds = upperBounds
        state = Mutex(Snapshot(bucketCounts: Array(repeating: 0, count: upperBounds.count + 1)))
    }

    /// Records one observation, normally in seconds. NaN is ignored (it would poison `_sum` forever).
    public func observe(_ value: Double) {
        guard !value.isNaN else { return }
        let bucket = upperBounds.firstIndex { value <= $0 } ?? upperBounds.count
        state.withLock {
            $0.bucketCounts[bucket] += 1
            $0.sum += value
            $0.count += 1
        }
    }

    /// Records a duration as seconds, e.g. from `ContinuousClock.measure`.
    public func observe(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        observe(Double(seconds) + Double(attoseconds) / 1e18)
    }

    public var count: UInt64 { state.withLock { $0.count } }
    public var sum: Double { state.withLock { $0.sum } }

    func snapshot() -> Snapshot { state.withLock { $0 } }
}

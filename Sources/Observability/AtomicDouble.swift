import Synchronization

/// A lock-free Double for counters and gauges: the bit pattern lives in an `Atomic<UInt64>` and
/// additions retry a compare-exchange, so hot-path increments never take a lock.
struct AtomicDouble: ~Copyable, Sendable {
    private let bits: Atomic<UInt64>

    init(_ value: Double = 0) {
        bits = Atomic(value.bitPattern)
    }

    func load() -> Double {
        Double(bitPattern: bits.load(ordering: .relaxed))
    }

    func store(_ value: Double) {
        bits.store(value.bitPattern, ordering: .relaxed)
    }

    func add(_ delta: Double) {
        var current = bits.load(ordering: .relaxed)
        while true {
            let next = (Double(bitPattern: current) + delta).bitPattern
            let (exchanged, original) = bits.compareExchange(expected: current, desired: next, ordering: .relaxed)
            if exchanged { return }
            current = original
        }
    }
}

import Foundation

/// A point on the monotonic clock by which a database call must be done.
struct Deadline: Sendable {
    let uptimeNanoseconds: UInt64

    /// An infinite (or absurdly long) span is no deadline at all (`migrate`'s statements).
    init(secondsFromNow seconds: Double) {
        guard seconds.isFinite, seconds < 1e9 else {
            uptimeNanoseconds = .max
            return
        }
        uptimeNanoseconds = DispatchTime.now().uptimeNanoseconds &+ UInt64(max(0, seconds) * 1e9)
    }

    /// Milliseconds left, 0 once passed.
    var remainingMilliseconds: Int32 {
        let now = DispatchTime.now().uptimeNanoseconds
        guard uptimeNanoseconds > now else { return 0 }
        return Int32(clamping: (uptimeNanoseconds - now + 999_999) / 1_000_000)
    }

    var hasPassed: Bool { DispatchTime.now().uptimeNanoseconds >= uptimeNanoseconds }
}

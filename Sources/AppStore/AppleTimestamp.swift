import Foundation

/// The one encoder of the dates we send to Apple. Apple documents every `timestamp` it takes
/// (`startDate`, `endDate`, … in a body or a query) as an int64 count of milliseconds since 1970,
/// and refuses a fraction (`4000015`, `4000016`): whatever the `Date` arithmetic produced, the
/// wire carries a whole number. Which way it rounds depends on the role, so a window never shrinks.
public enum AppleTimestamp {
    /// The start of a span: truncated toward the past, so nothing at the start is lost.
    public static func start(_ date: Date) -> Int64 { milliseconds(date, .down) }

    /// The end of a span: rounded toward the future, so nothing at the end is lost.
    public static func end(_ date: Date) -> Int64 { milliseconds(date, .up) }

    /// A moment that is not a bound (a purchase, a signature): truncated like Apple's own clocks.
    public static func instant(_ date: Date) -> Int64 { milliseconds(date, .down) }

    private static func milliseconds(_ date: Date, _ rule: FloatingPointRoundingRule) -> Int64 {
        let ms = (date.timeIntervalSince1970 * 1000).rounded(rule)
        guard ms.isFinite else { return 0 }
        return Int64(max(min(ms, Double(Int64.max / 2)), 0))
    }
}

import Foundation

/// StoreKit 2 dates are JSON numbers of milliseconds since 1970, sometimes fractional
/// (`1700000000000.5`); numeric strings are tolerated like everywhere else in Apple's JSON.
extension KeyedDecodingContainer {
    func millisecondsDate(_ key: Key) -> Date? {
        AppleDates.fromMilliseconds(lenientString(key))
    }
}

extension KeyedEncodingContainer {
    /// An int64 of milliseconds, as Apple writes and reads every timestamp (`AppleTimestamp`).
    mutating func encodeMilliseconds(_ date: Date?, forKey key: Key, as role: (Date) -> Int64 = AppleTimestamp.instant) throws {
        guard let date else { return }
        try encode(role(date), forKey: key)
    }
}

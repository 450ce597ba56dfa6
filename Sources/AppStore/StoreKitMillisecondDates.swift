import Foundation

/// StoreKit 2 dates are JSON numbers of milliseconds since 1970, sometimes fractional
/// (`1700000000000.5`); numeric strings are tolerated like everywhere else in Apple's JSON.
extension KeyedDecodingContainer {
    func millisecondsDate(_ key: Key) -> Date? {
        AppleDates.fromMilliseconds(lenientString(key))
    }
}

extension KeyedEncodingContainer {
    /// Whole milliseconds as an integer, anything finer as a decimal number.
    mutating func encodeMilliseconds(_ date: Date?, forKey key: Key) throws {
        guard let date else { return }
        let ms = date.timeIntervalSince1970 * 1000
        let whole = ms.rounded()
        if abs(ms - whole) < 0.001 { try encode(Int64(whole), forKey: key) } else { try encode(ms, forKey: key) }
    }
}

import Foundation

/// Apple's receipt dates: `*_ms` fields are epoch milliseconds as strings; the plain fields are
/// "2025-11-21 04:10:57 Etc/GMT". Public so the simulator writes exactly what the client reads.
/// Formatted and parsed by hand (gmtime_r/timegm): a DateFormatter costs tens of microseconds
/// to build, and every receipt answer carries several of these dates.
public enum AppleDates {
    public static func fromMilliseconds(_ text: String?) -> Date? {
        guard let text = text?.trimmingWhitespace, !text.isEmpty,
              let ms = Double(text), ms.isFinite, ms >= 0 else { return nil }
        return Date(timeIntervalSince1970: ms / 1000)
    }

    /// "yyyy-MM-dd HH:mm:ss" in UTC, with an optional " Etc/GMT", " GMT" or " UTC" suffix.
    public static func fromAppleString(_ text: String?) -> Date? {
        guard var text = text?.trimmingWhitespace, !text.isEmpty else { return nil }
        for suffix in [" Etc/GMT", " GMT", " UTC"] where text.hasSuffix(suffix) {
            text.removeLast(suffix.count)
        }
        let bytes = Array(text.utf8)
        guard bytes.count == 19 else { return nil }
        func number(_ start: Int, _ count: Int) -> Int32? {
            var value: Int32 = 0
            for byte in bytes[start..<start + count] {
                guard byte >= 0x30 && byte <= 0x39 else { return nil }
                value = value * 10 + Int32(byte - 0x30)
            }
            return value
        }
        let separators: [(Int, UInt8)] = [(4, 0x2D), (7, 0x2D), (10, 0x20), (13, 0x3A), (16, 0x3A)]
        guard separators.allSatisfy({ bytes[$0.0] == $0.1 }),
              let year = number(0, 4), let month = number(5, 2), let day = number(8, 2),
              let hour = number(11, 2), let minute = number(14, 2), let second = number(17, 2),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        var parts = tm()
        parts.tm_year = year - 1900
        parts.tm_mon = month - 1
        parts.tm_mday = day
        parts.tm_hour = hour
        parts.tm_min = minute
        parts.tm_sec = second
        let seconds = timegm(&parts)
        // timegm normalises 31 February into March: such a date is not a date.
        guard parts.tm_mday == day, parts.tm_mon == month - 1 else { return nil }
        return Date(timeIntervalSince1970: Double(seconds))
    }

    public static func appleString(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(27)
        func append(_ value: Int32, width: Int, then separator: UInt8?) {
            var divisor: Int32 = 1
            for _ in 1..<width { divisor *= 10 }
            while divisor > 0 {
                bytes.append(0x30 + UInt8(truncatingIfNeeded: value / divisor % 10))
                divisor /= 10
            }
            if let separator { bytes.append(separator) }
        }
        append(parts.tm_year + 1900, width: 4, then: 0x2D)
        append(parts.tm_mon + 1, width: 2, then: 0x2D)
        append(parts.tm_mday, width: 2, then: 0x20)
        append(parts.tm_hour, width: 2, then: 0x3A)
        append(parts.tm_min, width: 2, then: 0x3A)
        append(parts.tm_sec, width: 2, then: nil)
        return String(decoding: bytes, as: UTF8.self) + " Etc/GMT"
    }
}

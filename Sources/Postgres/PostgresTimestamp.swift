import Foundation

/// timestamptz in text form. Sessions run with TimeZone=UTC and ISO DateStyle, so the
/// server prints `2026-11-21 04:10:57.123456+00`.
public enum PostgresTimestamp {
    public static func format(_ date: Date) -> String {
        let micros = (date.timeIntervalSince1970 * 1_000_000).rounded()
        var seconds = time_t((micros / 1_000_000).rounded(.down))
        let fraction = Int(micros - Double(seconds) * 1_000_000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(format: "%04d-%02d-%02d %02d:%02d:%02d.%06d+00",
                      Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
                      Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), fraction)
    }

    public static func parse(_ text: String) -> Date? {
        // yyyy-mm-dd hh:mm:ss[.ffffff](+|-)hh[:mm]
        let bytes = Array(text.utf8)
        func number(_ start: Int, _ count: Int) -> Int? {
            guard start + count <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[start..<start + count] {
                guard byte >= 48 && byte <= 57 else { return nil }
                value = value * 10 + Int(byte - 48)
            }
            return value
        }
        guard bytes.count >= 22, let year = number(0, 4), let month = number(5, 2), let day = number(8, 2),
              let hour = number(11, 2), let minute = number(14, 2), let second = number(17, 2) else { return nil }
        var index = 19
        var fraction = 0.0
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            var scale = 0.1
            while index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 {
                fraction += Double(bytes[index] - 48) * scale
                scale /= 10
                index += 1
            }
        }
        guard index < bytes.count else { return nil }
        let sign = bytes[index] == UInt8(ascii: "-") ? -1 : 1
        guard let offsetHours = number(index + 1, 2) else { return nil }
        var offsetMinutes = 0
        if index + 3 < bytes.count, bytes[index + 3] == UInt8(ascii: ":") { offsetMinutes = number(index + 4, 2) ?? 0 }
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month - 1)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        parts.tm_sec = Int32(second)
        let epoch = timegm(&parts)
        let offset = sign * (offsetHours * 3600 + offsetMinutes * 60)
        return Date(timeIntervalSince1970: Double(epoch - offset) + fraction)
    }
}

import Foundation
import UTCTime

/// timestamptz in text form, `2026-11-21 04:10:57.123456+00`. Direct sessions run with
/// TimeZone=UTC; behind a pooler the server's own zone may show, so the offset is read.
public enum PostgresTimestamp {
    public static func format(_ date: Date) -> String {
        let micros = (date.timeIntervalSince1970 * 1_000_000).rounded()
        let seconds = Int((micros / 1_000_000).rounded(.down))
        let fraction = Int(micros - Double(seconds) * 1_000_000)
        return UTCDateTime(seconds: seconds, nanoseconds: fraction * 1_000)
            .text(separator: UInt8(ascii: " "), fractionDigits: 6, suffix: "+00")
    }

    /// `yyyy-mm-dd hh:mm:ss[.ffffff](+|-)hh[:mm[:ss]]`.
    public static func parse(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard let (moment, index) = UTCDateTime.parsePrefix(bytes), index < bytes.count,
              bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") else { return nil }
        func number(_ start: Int) -> Int? {
            guard start + 2 <= bytes.count, bytes[start] >= 0x30, bytes[start] <= 0x39,
                  bytes[start + 1] >= 0x30, bytes[start + 1] <= 0x39 else { return nil }
            return Int(bytes[start] - 0x30) * 10 + Int(bytes[start + 1] - 0x30)
        }
        let sign = bytes[index] == UInt8(ascii: "-") ? -1 : 1
        guard let hours = number(index + 1) else { return nil }
        var offset = hours * 3600
        if index + 3 < bytes.count, bytes[index + 3] == UInt8(ascii: ":") { offset += (number(index + 4) ?? 0) * 60 }
        if index + 6 < bytes.count, bytes[index + 6] == UInt8(ascii: ":") { offset += number(index + 7) ?? 0 }
        return Date(timeIntervalSince1970: Double(moment.secondsSince1970 - sign * offset) + Double(moment.nanosecond) / 1e9)
    }
}

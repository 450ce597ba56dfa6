import Foundation
import UTCTime

/// Apple's receipt dates: `*_ms` fields are epoch milliseconds as strings; the plain fields are
/// "2025-11-21 04:10:57 Etc/GMT". Public so the simulator writes exactly what the client reads.
/// Formatted and parsed through `UTCDateTime` (no DateFormatter: every receipt answer
/// carries several of these dates).
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
        guard bytes.count == 19, bytes[10] == UInt8(ascii: " "),
              let (moment, rest) = UTCDateTime.parsePrefix(bytes), rest == 19 else { return nil }
        return moment.date
    }

    public static func appleString(_ date: Date) -> String {
        UTCDateTime(seconds: Int(date.timeIntervalSince1970.rounded(.down))).text(separator: UInt8(ascii: " "), suffix: " Etc/GMT")
    }
}

import Foundation

/// Apple's receipt dates: `*_ms` fields are epoch milliseconds as strings; the plain fields are
/// "2025-11-21 04:10:57 Etc/GMT". Public so the simulator writes exactly what the client reads.
public enum AppleDates {
    public static func fromMilliseconds(_ text: String?) -> Date? {
        guard let text = text?.trimmingCharacters(in: .whitespaces), !text.isEmpty,
              let ms = Double(text), ms.isFinite, ms >= 0 else { return nil }
        return Date(timeIntervalSince1970: ms / 1000)
    }

    public static func fromAppleString(_ text: String?) -> Date? {
        guard var text = text?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
        for suffix in [" Etc/GMT", " GMT", " UTC"] where text.hasSuffix(suffix) {
            text.removeLast(suffix.count)
        }
        return makeFormatter().date(from: text)
    }

    public static func appleString(_ date: Date) -> String {
        makeFormatter().string(from: date) + " Etc/GMT"
    }

    /// A fresh formatter per call: DateFormatter is not Sendable, and these paths are not hot.
    private static func makeFormatter() -> DateFormatter {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        return formatter
    }
}

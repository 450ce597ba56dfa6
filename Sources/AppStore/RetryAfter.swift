import Foundation

/// Parses an HTTP `Retry-After` value: delay-seconds (decimals tolerated) or an HTTP-date.
/// Capped at an hour so a hostile or buggy value cannot park a job for days.
enum RetryAfter {
    static let cap: Double = 3600

    static func parse(_ value: String?, now: Date = Date()) -> Duration? {
        guard let text = value?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
        let seconds: Double
        if let number = Double(text), number.isFinite {
            seconds = number
        } else {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
            guard let date = formatter.date(from: text) else { return nil }
            seconds = date.timeIntervalSince(now)
        }
        return .milliseconds(Int64((min(max(seconds, 0), cap) * 1000).rounded()))
    }
}

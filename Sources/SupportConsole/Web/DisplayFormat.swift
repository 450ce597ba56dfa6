import Foundation
import Postgres

/// How times and durations read on the pages.
enum DisplayFormat {
    /// "2026-11-21 04:10:57 UTC", from the timestamp text the database layer already writes.
    static func time(_ date: Date?) -> String {
        guard let date else { return "–" }
        return String(PostgresTimestamp.format(date).prefix(19)) + " UTC"
    }

    /// "14:05", the clock time (UTC) of a chart's axis.
    static func clock(_ date: Date) -> String {
        String(PostgresTimestamp.format(date).dropFirst(11).prefix(5))
    }

    /// "42 s", "3 min 12 s", "2 h 5 min", "3 d 4 h".
    static func age(_ seconds: Double) -> String {
        let s = Int(max(0, seconds).rounded())
        switch s {
        case ..<60: return "\(s) s"
        case ..<3600: return "\(s / 60) min \(s % 60) s"
        case ..<86_400: return "\(s / 3600) h \(s % 3600 / 60) min"
        default: return "\(s / 86_400) d \(s % 86_400 / 3600) h"
        }
    }

    static func percent(_ part: Int, of whole: Int) -> String {
        whole == 0 ? "–" : String(format: "%.1f %%", Double(part) * 100 / Double(whole))
    }
}

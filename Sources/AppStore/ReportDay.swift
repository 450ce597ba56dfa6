import Foundation

/// One of Apple's reporting days: a calendar date in Pacific time (America/Los_Angeles), the zone
/// Sales and Trends reports are cut in.
public struct ReportDay: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let year: Int
    public let month: Int
    public let day: Int

    public static let pacific = TimeZone(identifier: "America/Los_Angeles")!

    /// Parses `YYYY-MM-DD`; nil for anything else or a date that does not exist.
    public init?(_ text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
              parts.allSatisfy({ $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }),
              let y = Int(parts[0]), let m = Int(parts[1]), let d = Int(parts[2]) else { return nil }
        self.init(year: y, month: m, day: d)
    }

    public init?(year: Int, month: Int, day: Int) {
        var components = DateComponents(year: year, month: month, day: day)
        components.timeZone = Self.pacific
        guard (1...12).contains(month), (1...31).contains(day), components.isValidDate(in: Self.calendar) else { return nil }
        self.year = year
        self.month = month
        self.day = day
    }

    /// The Pacific day an instant falls on.
    public init(containing date: Date) {
        let c = Self.calendar.dateComponents([.year, .month, .day], from: date)
        year = c.year!
        month = c.month!
        day = c.day!
    }

    /// Midnight Pacific at the start of the day, and of the next (a day is 23 or 25 hours at DST changes).
    public var start: Date { Self.calendar.date(from: DateComponents(year: year, month: month, day: day))! }
    public var end: Date { Self.calendar.date(byAdding: .day, value: 1, to: start)! }
    public var next: ReportDay { ReportDay(containing: end) }

    /// When Apple's daily report for this day is due: 8 a.m. Pacific the next day (App Store Connect Help,
    /// "Sales and Trends reports availability": "Reports are generally available by 8 a.m. Pacific Time";
    /// https://developer.apple.com/help/app-store-connect/reference/sales-and-trends-reports-availability).
    public var reportDueAt: Date { Self.calendar.date(bySettingHour: 8, minute: 0, second: 0, of: end)! }

    public var description: String {
        func pad(_ n: Int, _ width: Int) -> String { String(repeating: "0", count: max(0, width - String(n).count)) + String(n) }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))"
    }

    public static func < (a: ReportDay, b: ReportDay) -> Bool { (a.year, a.month, a.day) < (b.year, b.month, b.day) }

    private static let calendar: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = pacific
        return calendar
    }()
}

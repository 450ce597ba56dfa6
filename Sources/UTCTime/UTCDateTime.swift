import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A moment as UTC calendar fields, and back: the one place where dates are broken up
/// and put together for the text formats of logs, PostgreSQL and Apple.
/// By hand, not DateFormatter: building one is expensive, and log lines,
/// query parameters and receipt answers each carry several timestamps.
public struct UTCDateTime: Sendable, Equatable {
    public var year: Int
    public var month: Int
    public var day: Int
    public var hour: Int
    public var minute: Int
    public var second: Int
    public var nanosecond: Int

    public init(_ date: Date) {
        let interval = date.timeIntervalSince1970
        var whole = interval.rounded(.down)
        var nanos = Int(((interval - whole) * 1e9).rounded())
        if nanos >= 1_000_000_000 {
            whole += 1
            nanos -= 1_000_000_000
        }
        self.init(seconds: Int(whole), nanoseconds: nanos)
    }

    public init(seconds: Int, nanoseconds: Int = 0) {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        (year, month, day) = Self.civil(daysSince1970: days)
        hour = secondOfDay / 3_600
        minute = secondOfDay % 3_600 / 60
        second = secondOfDay % 60
        nanosecond = nanoseconds
    }

    /// Fields that name a real moment, or nil (31 February, 25 o'clock).
    public init?(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int, nanosecond: Int = 0) {
        guard (1...12).contains(month), (1...Self.days(inMonth: month, of: year)).contains(day), (0..<24).contains(hour),
              (0..<60).contains(minute), (0...60).contains(second), (0..<1_000_000_000).contains(nanosecond) else { return nil }
        (self.year, self.month, self.day, self.hour, self.minute, self.second, self.nanosecond) = (year, month, day, hour, minute, second, nanosecond)
    }

    /// A leap second (:60) counts as the first second of the next minute, as timegm has it.
    public var secondsSince1970: Int {
        Self.daysSince1970(year: year, month: month, day: day) * 86_400 + hour * 3_600 + minute * 60 + second
    }

    // Calendar arithmetic by hand (proleptic Gregorian; H. Hinnant's days_from_civil and
    // civil_from_days): timegm and gmtime_r cost more than this arithmetic, and every claimed
    // job's created_at is parsed.
    static func days(inMonth month: Int, of year: Int) -> Int {
        switch month {
        case 2: year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    static func daysSince1970(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * ((month + 9) % 12) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func civil(daysSince1970 days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    public var date: Date { Date(timeIntervalSince1970: Double(secondsSince1970) + Double(nanosecond) / 1e9) }

    /// `yyyy-mm-dd<separator>hh:mm:ss[.fraction]<suffix>`: `T`, 3 digits and `Z` for logs,
    /// a space, 6 digits and `+00` for PostgreSQL, a space, none and ` Etc/GMT` for Apple.
    public func text(separator: UInt8 = UInt8(ascii: "T"), fractionDigits: Int = 0, suffix: String = "Z") -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(20 + fractionDigits + suffix.utf8.count)
        func digits(_ value: Int, _ width: Int, then separator: UInt8?) {
            var divisor = 1
            for _ in 1..<width { divisor *= 10 }
            while divisor > 0 {
                bytes.append(0x30 + UInt8(truncatingIfNeeded: value / divisor % 10))
                divisor /= 10
            }
            if let separator { bytes.append(separator) }
        }
        digits(year, 4, then: UInt8(ascii: "-"))
        digits(month, 2, then: UInt8(ascii: "-"))
        digits(day, 2, then: separator)
        digits(hour, 2, then: UInt8(ascii: ":"))
        digits(minute, 2, then: UInt8(ascii: ":"))
        digits(second, 2, then: nil)
        if fractionDigits > 0 {
            bytes.append(UInt8(ascii: "."))
            var scale = 1
            for _ in fractionDigits..<9 { scale *= 10 }
            digits(nanosecond / scale, fractionDigits, then: nil)
        }
        bytes.append(contentsOf: suffix.utf8)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Reads `yyyy-mm-dd hh:mm:ss[.fraction]` (space or `T` between date and time) from the
    /// start of `bytes`; returns the moment and where the text after it begins.
    public static func parsePrefix(_ bytes: [UInt8]) -> (UTCDateTime, rest: Int)? {
        func number(_ start: Int, _ count: Int) -> Int? {
            guard start + count <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[start..<start + count] {
                guard byte >= 0x30 && byte <= 0x39 else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            return value
        }
        let separators: [(Int, [UInt8])] = [(4, [0x2D]), (7, [0x2D]), (10, [0x20, 0x54]), (13, [0x3A]), (16, [0x3A])]
        guard bytes.count >= 19, separators.allSatisfy({ $0.1.contains(bytes[$0.0]) }),
              let year = number(0, 4), let month = number(5, 2), let day = number(8, 2),
              let hour = number(11, 2), let minute = number(14, 2), let second = number(17, 2) else { return nil }
        var index = 19
        var nanosecond = 0
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            var scale = 100_000_000
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
                nanosecond += Int(bytes[index] - 0x30) * scale
                scale /= 10
                index += 1
            }
        }
        guard let moment = UTCDateTime(year: year, month: month, day: day, hour: hour, minute: minute, second: second,
                                       nanosecond: nanosecond) else { return nil }
        return (moment, index)
    }
}

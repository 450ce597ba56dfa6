import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A moment as UTC calendar fields, and back: the one place where dates are broken up
/// (gmtime_r) and put together (timegm) for the text formats of logs, PostgreSQL and Apple.
/// By hand, not DateFormatter: building one costs tens of microseconds, and log lines,
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
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        year = Int(parts.tm_year) + 1900
        month = Int(parts.tm_mon) + 1
        day = Int(parts.tm_mday)
        hour = Int(parts.tm_hour)
        minute = Int(parts.tm_min)
        second = Int(parts.tm_sec)
        nanosecond = nanoseconds
    }

    /// Fields that name a real moment, or nil (31 February, 25 o'clock).
    public init?(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int, nanosecond: Int = 0) {
        guard (1...12).contains(month), (1...31).contains(day), (0..<24).contains(hour), (0..<60).contains(minute),
              (0...60).contains(second), (0..<1_000_000_000).contains(nanosecond) else { return nil }
        (self.year, self.month, self.day, self.hour, self.minute, self.second, self.nanosecond) = (year, month, day, hour, minute, second, nanosecond)
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month - 1)
        parts.tm_mday = Int32(day)
        _ = timegm(&parts)
        // timegm normalises 31 February into March: such a date is not a date.
        guard parts.tm_mday == Int32(day), parts.tm_mon == Int32(month - 1) else { return nil }
    }

    public var secondsSince1970: Int {
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month - 1)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        parts.tm_sec = Int32(second)
        return Int(timegm(&parts))
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

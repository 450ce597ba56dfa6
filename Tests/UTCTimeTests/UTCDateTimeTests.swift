import Foundation
import UTCTime
import XCTest

final class UTCDateTimeTests: XCTestCase {
    func testTheThreeTextFormats() {
        let moment = UTCDateTime(seconds: 1_763_698_257, nanoseconds: 123_456_789) // 2025-11-21 04:10:57 UTC
        XCTAssertEqual(moment.text(fractionDigits: 3), "2025-11-21T04:10:57.123Z")
        XCTAssertEqual(moment.text(), "2025-11-21T04:10:57Z")
        XCTAssertEqual(moment.text(separator: UInt8(ascii: " "), fractionDigits: 6, suffix: "+00"), "2025-11-21 04:10:57.123456+00")
        XCTAssertEqual(moment.text(separator: UInt8(ascii: " "), suffix: " Etc/GMT"), "2025-11-21 04:10:57 Etc/GMT")
    }

    func testParsingRoundTripsAndRefusesImpossibleDates() throws {
        for seconds in [0, 951_782_400 /* 2000-02-29 */, 1_763_698_257, 4_102_444_799] {
            let text = UTCDateTime(seconds: seconds, nanoseconds: 250_000_000).text(fractionDigits: 3)
            let (parsed, rest) = try XCTUnwrap(UTCDateTime.parsePrefix(Array(text.utf8)))
            XCTAssertEqual(parsed.secondsSince1970, seconds, text)
            XCTAssertEqual(parsed.nanosecond, 250_000_000)
            XCTAssertEqual(rest, text.utf8.count - 1, "stops before the suffix")
        }
        for impossible in ["2025-02-29 00:00:00", "2025-13-01 00:00:00", "2025-04-31 00:00:00", "2025-01-01 24:00:00",
                           "2025-01-01 00:60:00", "2025/01/01 00:00:00", "2025-01-01", "20x5-01-01 00:00:00"] {
            XCTAssertNil(UTCDateTime.parsePrefix(Array(impossible.utf8)), impossible)
        }
    }

    func testDatesWithFractionsRoundToTheNanosecond() {
        let date = Date(timeIntervalSince1970: 1_763_698_257.5)
        let moment = UTCDateTime(date)
        XCTAssertEqual(moment.nanosecond, 500_000_000)
        XCTAssertEqual(moment.date.timeIntervalSince1970, date.timeIntervalSince1970, accuracy: 1e-6)
    }

    /// The calendar arithmetic agrees with the C library's gmtime_r and timegm, both ways, over
    /// four centuries before and after 1970 (every leap-year rule) in steps that reach every day of the month.
    func testCalendarArithmeticMatchesTheCLibrary() throws {
        var seconds = -12_700_000_000
        while seconds < 12_700_000_000 {
            var time = time_t(seconds)
            var parts = tm()
            gmtime_r(&time, &parts)
            let moment = UTCDateTime(seconds: seconds)
            XCTAssertEqual([moment.year, moment.month, moment.day, moment.hour, moment.minute, moment.second],
                           [Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday), Int(parts.tm_hour),
                            Int(parts.tm_min), Int(parts.tm_sec)], "\(seconds)")
            let rebuilt = try XCTUnwrap(UTCDateTime(year: moment.year, month: moment.month, day: moment.day, hour: moment.hour,
                                                    minute: moment.minute, second: moment.second))
            XCTAssertEqual(rebuilt.secondsSince1970, seconds)
            seconds += 86_400 * 17 + 3_607
        }
        XCTAssertNotNil(UTCDateTime(year: 2000, month: 2, day: 29, hour: 0, minute: 0, second: 0))
        XCTAssertNil(UTCDateTime(year: 1900, month: 2, day: 29, hour: 0, minute: 0, second: 0))
        XCTAssertNil(UTCDateTime(year: 2100, month: 2, day: 29, hour: 0, minute: 0, second: 0))
        XCTAssertEqual(UTCDateTime(year: 2016, month: 12, day: 31, hour: 23, minute: 59, second: 60)?.secondsSince1970, 1_483_228_800)
    }
}

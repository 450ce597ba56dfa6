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
}

import AppStore
import Foundation
import XCTest

final class AppleDatesTests: XCTestCase {
    func testFormatsAppleStringInUTC() {
        XCTAssertEqual(AppleDates.appleString(Date(timeIntervalSince1970: 1_763_698_257.9)), "2025-11-21 04:10:57 Etc/GMT")
        XCTAssertEqual(AppleDates.appleString(Date(timeIntervalSince1970: 0)), "1970-01-01 00:00:00 Etc/GMT")
        XCTAssertEqual(AppleDates.appleString(Date(timeIntervalSince1970: 951_782_400)), "2000-02-29 00:00:00 Etc/GMT")
    }

    func testParsesEverySuffixAndRoundTrips() {
        let expected = Date(timeIntervalSince1970: 1_763_698_257)
        for text in ["2025-11-21 04:10:57 Etc/GMT", "2025-11-21 04:10:57 GMT", "2025-11-21 04:10:57 UTC",
                     " 2025-11-21 04:10:57 ", "2025-11-21 04:10:57"] {
            XCTAssertEqual(AppleDates.fromAppleString(text), expected, text)
        }
        for seconds in stride(from: 0.0, to: 4_000_000_000, by: 86_399 * 37.5) {
            let date = Date(timeIntervalSince1970: seconds.rounded(.down))
            XCTAssertEqual(AppleDates.fromAppleString(AppleDates.appleString(date)), date)
        }
    }

    func testRejectsWhatIsNotADate() {
        for text in [nil, "", "2025-11-21", "2025-13-01 00:00:00", "2025-02-31 00:00:00", "2025-11-21T04:10:57",
                     "2025-11-21 24:00:00", "2025-11-21 04:10:5x Etc/GMT", "２０２５-11-21 04:10:57", "yesterday"] {
            XCTAssertNil(AppleDates.fromAppleString(text), text ?? "nil")
        }
        XCTAssertEqual(AppleDates.fromMilliseconds("1763698257123"), Date(timeIntervalSince1970: 1_763_698_257.123))
        XCTAssertNil(AppleDates.fromMilliseconds("-5"))
    }
}

/// Every date we send Apple is an int64 of milliseconds: a span computed from `--since 72h` carries
/// fractions (`{"endDate":1795609199300.5122,…}`), and Apple refuses those.
final class AppleTimestampTests: XCTestCase {
    func testHistorySpanGoesOutAsWholeMillisecondsThatLoseNothing() throws {
        let request = NotificationHistoryRequest(startDate: Date(timeIntervalSince1970: 1_795_349_999.300_512_2),
                                                 endDate: Date(timeIntervalSince1970: 1_795_609_199.300_512_2), onlyFailures: true)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let body = String(decoding: try encoder.encode(request), as: UTF8.self)
        XCTAssertEqual(body, #"{"endDate":1795609199301,"onlyFailures":true,"startDate":1795349999300}"#,
                       "the start truncated toward the past, the end rounded toward the future")
    }

    func testRolesRoundTheirOwnWay() {
        let date = Date(timeIntervalSince1970: 1_700_000_000.000_4)
        XCTAssertEqual(AppleTimestamp.start(date), 1_700_000_000_000)
        XCTAssertEqual(AppleTimestamp.end(date), 1_700_000_000_001)
        XCTAssertEqual(AppleTimestamp.instant(date), 1_700_000_000_000)
        let whole = Date(timeIntervalSince1970: 1_700_000_000.5)
        XCTAssertEqual(AppleTimestamp.start(whole), AppleTimestamp.end(whole), "a whole millisecond is itself either way")
    }
}

import Foundation
import XCTest
@testable import Observability

final class LogFormattingTests: XCTestCase {
    private func logfmt(_ fields: KeyValuePairs<String, LogValue>) -> String {
        var line = LogLineBuilder(format: .logfmt, timestamp: "T", level: .info, event: "e")
        for (key, value) in fields { line.append(key: key, value: value) }
        return line.finish()
    }

    func testTimestampIsUTCWithMillisecondsAndZ() {
        // 2026-11-21T04:10:57Z = 1795234257
        XCTAssertEqual(utcTimestamp(seconds: 1_795_234_257, nanoseconds: 123_999_999), "2026-11-21T04:10:57.123Z")
        XCTAssertEqual(utcTimestamp(seconds: 0, nanoseconds: 7_000_000), "1970-01-01T00:00:00.007Z")
        XCTAssertEqual(utcTimestamp(seconds: 951_782_400, nanoseconds: 0), "2000-02-29T00:00:00.000Z")
    }

    func testLogfmtLineShape() {
        var line = LogLineBuilder(format: .logfmt, timestamp: "2026-11-21T04:10:57.123Z", level: .info, event: "job_finished")
        line.append(key: "job_id", value: .int(42))
        line.append(key: "outcome", value: "credited")
        line.append(key: "ms", value: 812)
        XCTAssertEqual(line.finish(),
                       "ts=2026-11-21T04:10:57.123Z level=info event=job_finished job_id=42 outcome=credited ms=812")
    }

    func testLogfmtQuotingAndEscaping() {
        XCTAssertEqual(logfmt(["a": ""]), #"ts=T level=info event=e a="""#)
        XCTAssertEqual(logfmt(["a": "two words"]), #"ts=T level=info event=e a="two words""#)
        XCTAssertEqual(logfmt(["a": "k=v"]), #"ts=T level=info event=e a="k=v""#)
        XCTAssertEqual(logfmt(["a": #"say "hi""#]), #"ts=T level=info event=e a="say \"hi\"""#)
        XCTAssertEqual(logfmt(["a": #"C:\tmp"#]), #"ts=T level=info event=e a="C:\\tmp""#)
        XCTAssertEqual(logfmt(["a": "l1\nl2\r\tx"]), #"ts=T level=info event=e a="l1\nl2\r\tx""#)
        XCTAssertEqual(logfmt(["a": "bell\u{07}del\u{7F}"]), #"ts=T level=info event=e a="bell\u0007del\u007F""#)
        XCTAssertEqual(logfmt(["a": "héllo/ü:-_.,"]), "ts=T level=info event=e a=héllo/ü:-_.,")
    }

    func testLogfmtValueKinds() {
        XCTAssertEqual(logfmt(["i": -3, "d": 0.25, "w": 2.0, "b": true, "n": .double(.nan), "inf": .double(-.infinity)]),
                       "ts=T level=info event=e i=-3 d=0.25 w=2 b=true n=NaN inf=-Inf")
    }

    /// Integers are written digit by digit into the line: the same text as `String(i)`.
    func testIntegersAreWrittenAsTheirDecimalText() throws {
        for value in [0, 7, -1, 9, 10, 99, 100, 1_000_000, -1_234_567_890, Int.max, Int.min, Int.max - 1, Int.min + 1] {
            XCTAssertEqual(logfmt(["i": .int(value)]), "ts=T level=info event=e i=\(value)")
            var line = LogLineBuilder(format: .json, timestamp: "T", level: .info, event: "e")
            line.append(key: "i", value: .int(value))
            let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.finish().utf8)) as? [String: Any])
            XCTAssertEqual((object["i"] as? NSNumber)?.int64Value, Int64(value))
        }
    }

    func testLogfmtKeysCannotBreakTheLine() {
        XCTAssertEqual(logfmt(["bad key=\"x": 1, "": 2]), "ts=T level=info event=e bad_key__x=1 _=2")
    }

    func testJSONLinesParseBackWithTypesAndOrder() throws {
        let sink = CapturingLogSink()
        let logger = Logger(minimumLevel: .debug, format: .json, sink: sink)
        let nasty = "quote\" backslash\\ newline\n tab\t nul\u{0} bell\u{07} emoji🙂 del\u{7F}"
        logger.info("job_finished", ["job_id": .int(42), "outcome": "credited", "ms": 812.5, "ok": false,
                                     "text": .string(nasty), "nan": .double(.nan), "whole": 3.0])
        let line = try XCTUnwrap(sink.lines.first)
        XCTAssertTrue(line.hasPrefix(#"{"ts":""#), line)
        XCTAssertTrue(line.contains(#""level":"info","event":"job_finished","job_id":42,"outcome":"credited","ms":812.5,"ok":false,"#), line)
        XCTAssertFalse(line.contains("\n"))
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        XCTAssertEqual(object["level"] as? String, "info")
        XCTAssertEqual(object["job_id"] as? Int, 42)
        XCTAssertEqual(object["ms"] as? Double, 812.5)
        XCTAssertEqual(object["ok"] as? Bool, false)
        XCTAssertEqual(object["text"] as? String, nasty)
        XCTAssertEqual(object["nan"] as? String, "NaN")
        XCTAssertEqual(object["whole"] as? Int, 3)
        XCTAssertNotNil((object["ts"] as? String).flatMap(ISO8601WithMilliseconds.parse))
    }

    func testLogfmtLoggerLineHasTimestampLevelEventThenFieldsInOrder() throws {
        let sink = CapturingLogSink()
        let logger = Logger(sink: sink).with(["worker_id": "w1"])
        logger.notice("sweep", ["z": 1, "a": 2, "m": 3])
        let line = try XCTUnwrap(sink.lines.first)
        let tokens = line.split(separator: " ")
        XCTAssertTrue(tokens[0].hasPrefix("ts="))
        XCTAssertNotNil(ISO8601WithMilliseconds.parse(String(tokens[0].dropFirst(3))), line)
        XCTAssertEqual(tokens.dropFirst().joined(separator: " "), "level=notice event=sweep worker_id=w1 z=1 a=2 m=3")
    }

    func testLevelFilteringAndLazyFields() {
        let sink = CapturingLogSink()
        let logger = Logger(minimumLevel: .warning, sink: sink)
        var evaluated = false
        func expensive() -> LogValue { evaluated = true; return "x" }
        logger.debug("d", ["f": expensive()])
        logger.info("i", ["f": expensive()])
        logger.notice("n")
        logger.warning("w")
        logger.error("e")
        logger.log(.info, "i2", fields: [(key: "k", value: 1)])
        logger.log(.error, "e2", fields: [(key: "k", value: 1)])
        XCTAssertFalse(evaluated, "fields of a dropped call must not be built")
        XCTAssertEqual(sink.lines.map { $0.split(separator: " ")[2] }, ["event=w", "event=e", "event=e2"])
        XCTAssertTrue(logger.isEnabled(.error))
        XCTAssertFalse(logger.isEnabled(.notice))
        XCTAssertTrue(logger.withMinimumLevel(.debug).isEnabled(.debug))
    }

    func testLevelAndFormatParsing() {
        XCTAssertEqual(LogLevel(parsing: " WARNING\n"), .warning)
        XCTAssertEqual(LogLevel(parsing: "debug"), .debug)
        XCTAssertNil(LogLevel(parsing: "verbose"))
        XCTAssertNil(LogLevel(parsing: ""))
        XCTAssertEqual(LogLevel.allCases.sorted(), [.debug, .info, .notice, .warning, .error])
        XCTAssertLessThan(LogLevel.notice, LogLevel.warning)
        XCTAssertEqual(LogFormat(parsing: "JSON"), .json)
        XCTAssertNil(LogFormat(parsing: "xml"))
    }

    func testLogValueHelpers() {
        struct Boom: Error, CustomStringConvertible { var description: String { "boom" } }
        XCTAssertEqual(LogValue.describing(UUID(uuidString: "00000000-0000-0000-0000-000000000001")!),
                       .string("00000000-0000-0000-0000-000000000001"))
        XCTAssertEqual(LogValue.error(Boom()), .string("boom"))
        let id = 7
        let interpolated: LogValue = "job-\(id)"
        XCTAssertEqual(interpolated, .string("job-7"))
    }
}

/// Strict `YYYY-MM-DDTHH:MM:SS.mmmZ` check for the `ts` field.
enum ISO8601WithMilliseconds {
    static func parse(_ text: String) -> Date? {
        guard text.utf8.count == 24, text.hasSuffix("Z") else { return nil }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text)
    }
}

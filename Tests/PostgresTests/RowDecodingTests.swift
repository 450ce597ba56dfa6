@testable import Postgres
import TestSupport
import XCTest

/// A result keeps its cells as bytes (`PostgresRows`); numbers are read from them directly and
/// everything else through its text. NULL, the empty string and bad text stay apart.
final class RowDecodingTests: XCTestCase {
    func testCellsDecodeAsTheirTypesAndNullAndEmptyStayApart() async throws {
        let client = PostgresClient(conninfo: try await TestDatabase.fresh(migrated: false), maxConnections: 1)
        let row = try await client.query("""
            SELECT 0, -1, 9223372036854775807, -9223372036854775808, 2147483647::int4, 2147483648::int8, NULL::int, '',
                   'ünïcødé 支付', 'abc', '12x', true, 1.5::float8
            """)[0]
        XCTAssertEqual(try row.decode(Int.self, at: 0), 0)
        XCTAssertEqual(try row.decode(Int.self, at: 1), -1)
        XCTAssertEqual(try row.decode(Int.self, at: 2), Int.max)
        XCTAssertEqual(try row.decode(Int64.self, at: 3), Int64.min)
        XCTAssertEqual(try row.decode(Int32.self, at: 4), Int32.max)
        XCTAssertThrowsError(try row.decode(Int32.self, at: 5)) { XCTAssertTrue("\($0)".contains("is not a Int32"), "\($0)") }
        XCTAssertNil(try row.decode(Int?.self, at: 6))
        XCTAssertThrowsError(try row.decode(Int.self, at: 6)) { XCTAssertTrue("\($0)".contains("is NULL"), "\($0)") }
        XCTAssertEqual(try row.decode(String?.self, at: 7), "")
        XCTAssertThrowsError(try row.decode(Int.self, at: 7))
        XCTAssertEqual(try row.decode(String.self, at: 8), "ünïcødé 支付")
        XCTAssertThrowsError(try row.decode(Int.self, at: 9))
        XCTAssertThrowsError(try row.decode(Int.self, at: 10))
        XCTAssertTrue(try row.decode(Bool.self, at: 11))
        XCTAssertEqual(try row.decode(Double.self, at: 12), 1.5)
        XCTAssertEqual(row.cells[5...8], ["2147483648", nil, "", "ünïcødé 支付"])

        let many = try await client.query("SELECT g, CASE WHEN g % 3 = 0 THEN NULL ELSE repeat('x', g) END FROM generate_series(0, 299) g")
        XCTAssertEqual(many.count, 300)
        for (index, row) in many.enumerated() {
            XCTAssertEqual(try row.decode(Int.self, at: 0), index)
            XCTAssertEqual(try row.decode(String?.self, at: 1), index % 3 == 0 ? nil : String(repeating: "x", count: index))
        }
        await client.close()
    }

    func testIntegerTextIsReadDigitByDigit() {
        func parse(_ text: String) -> Int? {
            Array(text.utf8).withUnsafeBufferPointer { PostgresInteger.parse($0) }
        }
        XCTAssertEqual(parse("0"), 0)
        XCTAssertEqual(parse("-0"), 0)
        XCTAssertEqual(parse("+7"), 7)
        XCTAssertEqual(parse("9223372036854775807"), Int.max)
        XCTAssertEqual(parse("-9223372036854775808"), Int.min)
        for bad in ["", "-", "+", "9223372036854775808", "-9223372036854775809", "99999999999999999999", "1 ", " 1", "1.0", "--1", "0x10"] {
            XCTAssertNil(parse(bad), bad)
        }
    }
}

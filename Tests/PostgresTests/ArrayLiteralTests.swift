@testable import Postgres
import XCTest

final class ArrayLiteralTests: XCTestCase {
    /// Integer arrays are written digit by digit (the hot path's job ids); they must read as
    /// the generic encoder writes them, extremes and signs included.
    func testIntegerArraysEncodeAsTheGenericPathDoes() {
        let integers = [0, 7, -7, 10, 1_000_000, Int.max, Int.min, 42]
        let direct = String(decoding: PostgresArrayLiteral.encode(integers), as: UTF8.self)
        XCTAssertEqual(direct, "{0,7,-7,10,1000000,9223372036854775807,-9223372036854775808,42}")
        XCTAssertEqual(try PostgresArrayLiteral.decode(direct).map { $0.flatMap { Int($0) } }, integers.map { $0 })
        XCTAssertEqual(String(decoding: PostgresArrayLiteral.encode([Int]()), as: UTF8.self), "{}")
        XCTAssertEqual(try PostgresArrayLiteral.decode(String(decoding: PostgresArrayLiteral.encode(integers.map { Optional(String($0)) }), as: UTF8.self)),
                       integers.map { String($0) })
    }

    /// Text arrays: quotes and backslashes escaped, everything else copied as is, NULLs bare;
    /// and they read back to what went in.
    func testTextArraysEscapeOnlyQuotesAndBackslashes() throws {
        let strings = ["plain", "with \"quote\"", "back\\slash", "", "NULL", "comma,brace{}", "ünïcødé 支付"]
        let written = String(decoding: PostgresArrayLiteral.encode(strings.map { Optional($0) }), as: UTF8.self)
        XCTAssertEqual(written, #"{"plain","with \"quote\"","back\\slash","","NULL","comma,brace{}","ünïcødé 支付"}"#)
        XCTAssertEqual(try PostgresArrayLiteral.decode(written), strings.map { Optional($0) })
        let withNull: [String?] = ["a", nil, "b\"c"]
        XCTAssertEqual(String(decoding: PostgresArrayLiteral.encode(withNull), as: UTF8.self), #"{"a",NULL,"b\"c"}"#)
        XCTAssertEqual(try PostgresArrayLiteral.decode(String(decoding: PostgresArrayLiteral.encode(withNull), as: UTF8.self)), withNull)
    }
}

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
        XCTAssertEqual(try PostgresArrayLiteral.decode(String(decoding: PostgresArrayLiteral.encode(integers.map { String($0) }), as: UTF8.self)),
                       integers.map { String($0) })
    }
}

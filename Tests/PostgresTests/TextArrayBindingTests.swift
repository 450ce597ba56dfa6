@testable import Postgres
import TestSupport
import XCTest

/// Text arrays go to the server in binary (`PostgresTextArray`): the server must read exactly the
/// strings that went in, whatever they hold, and a NUL must still be refused before sending.
final class TextArrayBindingTests: XCTestCase {
    func testTheServerReadsEveryStringAsItWent() async throws {
        let client = PostgresClient(conninfo: try await TestDatabase.fresh(migrated: false), maxConnections: 1)
        let strings = ["plain", "with \"quote\"", "back\\slash", "", "NULL", "comma,brace{}", " padded ", "ünïcødé 支付 🧾",
                       String(repeating: "QUFB", count: 600)]
        let read = try await client.query("SELECT x, n FROM unnest($1::text[]) WITH ORDINALITY AS t(x, n) ORDER BY n", [strings])
        XCTAssertEqual(try read.map { try $0.decode(String.self, at: 0) }, strings)

        let withNulls: [String?] = [nil, "a", nil, "b\"c", nil]
        let nulls = try await client.query("SELECT x IS NULL, coalesce(x, '') FROM unnest($1::text[]) WITH ORDINALITY AS t(x, n) ORDER BY n", [withNulls])
        XCTAssertEqual(try nulls.map { try $0.decode(Bool.self, at: 0) }, withNulls.map { $0 == nil })
        XCTAssertEqual(try nulls.map { try $0.decode(String.self, at: 1) }, withNulls.map { $0 ?? "" })

        let empty = try await client.query("SELECT cardinality($1::text[]), $1::text[] = '{}'::text[]", [[String]()])
        XCTAssertEqual(try empty[0].decode(Int.self, at: 0), 0)
        XCTAssertTrue(try empty[0].decode(Bool.self, at: 1))

        // Compared with a text column, with no cast: the server infers text[].
        let matched = try await client.query("SELECT count(*) FROM (VALUES ('a'), ('b\"c'), ('z')) AS v(x) WHERE x = ANY($1)", [withNulls])
        XCTAssertEqual(try matched[0].decode(Int.self, at: 0), 2)
        await client.close()
    }

    func testANulInATextArrayIsRefusedBeforeSending() async throws {
        let client = PostgresClient(conninfo: try await TestDatabase.fresh(migrated: false), maxConnections: 1)
        for array in [["a", "b\u{0}c"], ["\u{0}"]] {
            do {
                _ = try await client.query("SELECT cardinality($1::text[])", [array])
                XCTFail("a NUL inside a text array must be refused")
            } catch let error as PostgresError {
                XCTAssertEqual(error.sqlState, "22021")
                XCTAssertTrue(error.message.contains("NUL"), error.message)
            }
        }
        let after = try await client.query("SELECT 1")
        XCTAssertEqual(try after[0].decode(Int.self, at: 0), 1, "the connection is still usable")
        await client.close()
    }
}

extension TextArrayBindingTests {
    /// Only arrays of strings go as text[]: an array of other optionals holding nothing but nils
    /// (a batch whose retry delays are all absent) keeps the type its statement gives it.
    func testOnlyStringArraysGoAsText() async throws {
        let client = PostgresClient(conninfo: try await TestDatabase.fresh(migrated: false), maxConnections: 1)
        let delays: [Double?] = [nil, nil]
        let statuses: [Int64?] = [nil]
        let rows = try await client.query("SELECT cardinality($1::float8[]), cardinality($2::int[])", [delays, statuses])
        XCTAssertEqual(try rows[0].decode(Int.self, at: 0), 2)
        XCTAssertEqual(try rows[0].decode(Int.self, at: 1), 1)
        await client.close()
    }
}

extension TextArrayBindingTests {
    func testANulIsFoundWhereverItIs() {
        XCTAssertFalse("".containsNUL)
        XCTAssertFalse("plain ünïcødé 支付".containsNUL)
        XCTAssertFalse(String(repeating: "QUFB", count: 600).containsNUL)
        for text in ["\u{0}", "\u{0}abc", "ab\u{0}c", "abc\u{0}", String(repeating: "x", count: 5000) + "\u{0}"] {
            XCTAssertTrue(text.containsNUL, text.debugDescription)
        }
        XCTAssertTrue(String("ab\u{0}cd".dropFirst()).containsNUL)
    }
}

import JSONWire
import XCTest

final class JSONParserTests: XCTestCase {
    private func parse(_ text: String) throws -> JSONValue { try JSONValue.parse(Array(text.utf8)) }

    /// The error a document is rejected with, as "reason@offset".
    private func rejection(_ bytes: [UInt8]) -> String {
        do throws(JSONParseError) {
            let value = try JSONValue.parse(bytes)
            return "accepted: \(value)"
        } catch {
            return "\(error.reason)@\(error.offset)"
        }
    }

    private func rejection(_ text: String) -> String { rejection(Array(text.utf8)) }

    func testEveryKindOfValue() throws {
        XCTAssertEqual(try parse("null"), .null)
        XCTAssertEqual(try parse("true"), .bool(true))
        XCTAssertEqual(try parse(" false "), .bool(false))
        XCTAssertEqual(try parse(#""text""#), .string("text"))
        XCTAssertEqual(try parse("[]"), .array([]))
        XCTAssertEqual(try parse("{}"), .object([:]))
        XCTAssertEqual(try parse("\r\n\t[ 1 , \"a\" , [ null ] , { } ]\n"),
                       .array([.number("1"), .string("a"), .array([.null]), .object([:])]))
        let object = try parse(#"{"status":0,"receipt":{"bundle_id":"b","in_app":[{"quantity":"1"}]},"ok":true}"#)
        XCTAssertEqual(object["status"], .number("0"))
        XCTAssertEqual(object["receipt"]?["bundle_id"]?.stringValue, "b")
        XCTAssertEqual(object["receipt"]?["in_app"]?.arrayValue?.first?["quantity"], .string("1"))
        XCTAssertEqual(object["ok"], .bool(true))
        XCTAssertNil(object["missing"])
        XCTAssertNil(JSONValue.string("s")["key"], "only objects have members")
        XCTAssertNil(JSONValue.number("1").stringValue)
        XCTAssertNil(JSONValue.string("1").arrayValue)
    }

    func testNumbersKeepTheirExactText() throws {
        for text in ["0", "-0", "42", "-17", "3.25", "-0.5", "1e3", "1E+3", "2.5e-7", "12345678901234567890123"] {
            XCTAssertEqual(try parse(text), .number(text), text)
        }
        XCTAssertEqual(try parse("-17").int64Value, -17)
        XCTAssertEqual(try parse("3.0").int64Value, 3)
        XCTAssertEqual(try parse("3e2").int64Value, 300)
        XCTAssertEqual(try parse("9223372036854775807").int64Value, .max)
        XCTAssertNil(try parse("3.5").int64Value)
        XCTAssertNil(try parse("1e30").int64Value)
        XCTAssertNil(try parse(#""3""#).int64Value)
    }

    func testEscapesAndUnicode() throws {
        XCTAssertEqual(try parse(#""a\"b\\c\/d\be\ff\ng\rh\ti""#), .string("a\"b\\c/d\u{8}e\u{C}f\ng\rh\ti"))
        XCTAssertEqual(try parse(#""\u0041\u00fc\u00FC\u65e5\u0000""#), .string("Aüü日\u{0}"))
        XCTAssertEqual(try parse(#""\ud83d\ude00 \uD83C\uDFAE""#), .string("😀 🎮"))
        XCTAssertEqual(try parse("\"日本 müller 😀\""), .string("日本 müller 😀"))
        XCTAssertEqual(try parse("\"prefix ü \\n suffix 😀\""), .string("prefix ü \n suffix 😀"))
        XCTAssertEqual(try parse(#"{"k\u0065y":1}"#)["key"], .number("1"))
    }

    func testDuplicateKeysLastWins() throws {
        XCTAssertEqual(try parse(#"{"a":1,"b":2,"a":3}"#), .object(["a": .number("3"), "b": .number("2")]))
    }

    func testRejectsWhatRFC8259Rejects() {
        XCTAssertEqual(rejection(""), "unexpected end of input@0")
        XCTAssertEqual(rejection("   "), "unexpected end of input@3")
        XCTAssertEqual(rejection("{} x"), "unexpected data after the value@3")
        XCTAssertEqual(rejection("[1] [2]"), "unexpected data after the value@4")
        XCTAssertEqual(rejection("01"), "leading zero in a number@0")
        XCTAssertEqual(rejection("[-012]"), "leading zero in a number@2")
        XCTAssertEqual(rejection("-"), "unexpected end of input@1")
        XCTAssertEqual(rejection("1."), "unexpected end of input@2")
        XCTAssertEqual(rejection("1.e3"), "invalid number: no digit after '.'@2")
        XCTAssertEqual(rejection("1e"), "unexpected end of input@2")
        XCTAssertEqual(rejection("[1e+]"), "invalid number: no digit in the exponent@4")
        XCTAssertEqual(rejection("+1"), "unexpected character@0")
        XCTAssertEqual(rejection(".5"), "unexpected character@0")
        XCTAssertEqual(rejection("tru"), "invalid literal@0")
        XCTAssertEqual(rejection("nul1"), "invalid literal@0")
        XCTAssertEqual(rejection("True"), "unexpected character@0")
        XCTAssertEqual(rejection("[1,]"), "unexpected character@3")
        XCTAssertEqual(rejection("[1 2]"), "expected ',' or ']'@3")
        XCTAssertEqual(rejection(#"{"a":1,}"#), "expected a member name@7")
        XCTAssertEqual(rejection(#"{"a" 1}"#), "expected ':'@5")
        XCTAssertEqual(rejection(#"{"a":1 "b":2}"#), "expected ',' or '}'@7")
        XCTAssertEqual(rejection("{a:1}"), "expected a member name@1")
        XCTAssertEqual(rejection(#"{"a":1"#), "unexpected end of input@6")
        XCTAssertEqual(rejection("[1, // note\n2]"), "unexpected character@4")
        XCTAssertEqual(rejection("\u{FEFF}{}"), "unexpected character@0", "no byte order mark")
    }

    func testRejectsBadStrings() {
        XCTAssertEqual(rejection("\"tab\there\""), "control character in string@4")
        XCTAssertEqual(rejection("\"escaped \\n then raw \n\""), "control character in string@21")
        XCTAssertEqual(rejection(#""\x41""#), "invalid escape@2")
        XCTAssertEqual(rejection(#""\u12G4""#), "invalid \\u escape@5")
        XCTAssertEqual(rejection(#""\u12""#), "unexpected end of input@6")
        XCTAssertEqual(rejection(#""\ud800""#), "lone high surrogate@1")
        XCTAssertEqual(rejection(#""\ud800\u0041""#), "lone high surrogate@1")
        XCTAssertEqual(rejection(#""a\udc00""#), "lone low surrogate@2")
        XCTAssertEqual(rejection(#""open"#), "unexpected end of input@5")
        XCTAssertEqual(rejection(#""\"#), "unexpected end of input@2")
    }

    func testRejectsInvalidUTF8() {
        let quote = UInt8(ascii: "\"")
        for bad: [UInt8] in [[0xFF], [0xC3], [0xC0, 0xAF] /* overlong */, [0xED, 0xA0, 0x80] /* UTF-8 surrogate */,
                             [0xF4, 0x90, 0x80, 0x80] /* above U+10FFFF */, [0x80]] {
            XCTAssertEqual(rejection([quote] + bad + [quote]), "invalid UTF-8 in string@1", "\(bad)")
            XCTAssertEqual(rejection([quote, 0x5C, UInt8(ascii: "n")] + bad + [quote]), "invalid UTF-8 in string@1", "\(bad) after an escape")
        }
        XCTAssertEqual(rejection([0xC3, 0xBC]), "unexpected character@0", "outside strings nothing but ASCII")
    }

    func testNestingIsLimited() throws {
        let depth = JSONValue.maximumDepth
        XCTAssertNoThrow(try parse(String(repeating: "[", count: depth) + String(repeating: "]", count: depth)))
        XCTAssertNoThrow(try parse(String(repeating: #"{"a":"#, count: depth - 1) + "{}" + String(repeating: "}", count: depth - 1)))
        XCTAssertEqual(rejection(String(repeating: "[", count: depth + 1) + String(repeating: "]", count: depth + 1)),
                       "nesting deeper than 64 levels@64")
        XCTAssertEqual(rejection(String(repeating: "[", count: 100_000)), "nesting deeper than 64 levels@64")
    }

    func testParsesFromAnyByteCollection() throws {
        let text = #"{"a":[1,"b"]}"#
        let expected = JSONValue.object(["a": .array([.number("1"), .string("b")])])
        XCTAssertEqual(try JSONValue.parse(text.utf8), expected, "String.UTF8View")
        XCTAssertEqual(try JSONValue.parse(Array(text.utf8)[...]), expected, "ArraySlice")
        XCTAssertEqual(try JSONValue.parse(Array(text.utf8).lazy.map { $0 }), expected, "not contiguous")
    }

    func testErrorDescriptionSaysWhatAndWhere() {
        XCTAssertEqual(String(describing: JSONParseError("expected ':'", offset: 5)), "invalid JSON: expected ':' at byte offset 5")
    }
}

import JSONWire
import XCTest

final class JSONWriterTests: XCTestCase {
    private func text(_ write: (inout JSONWriter) -> Void) -> String {
        var writer = JSONWriter()
        write(&writer)
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    private func quoted(_ value: String) -> String {
        var out: [UInt8] = []
        JSONWriter.appendQuoted(value, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    func testCommasAndColonsAreWrittenForTheCaller() {
        let written = text { w in
            w.beginObject()
            w.key("status"); w.integer(0)
            w.key("list"); w.beginArray()
            w.string("a"); w.integer(-12); w.bool(true); w.bool(false); w.null()
            w.beginObject(); w.endObject()
            w.beginArray(); w.endArray()
            w.endArray()
            w.key("nested"); w.beginObject(); w.key("x"); w.string("y"); w.endObject()
            w.key("last"); w.integer(.min)
            w.endObject()
        }
        XCTAssertEqual(written, #"{"status":0,"list":["a",-12,true,false,null,{},[]],"nested":{"x":"y"},"last":-9223372036854775808}"#)
        XCTAssertEqual(text { $0.beginArray(); $0.endArray() }, "[]")
        XCTAssertEqual(text { $0.integer(Int64.max) }, "9223372036854775807")
    }

    func testEscaping() {
        XCTAssertEqual(quoted(""), #""""#)
        XCTAssertEqual(quoted("plain / text"), #""plain / text""#, "the slash stays as it is")
        XCTAssertEqual(quoted(#"say "hi" C:\tmp"#), #""say \"hi\" C:\\tmp""#)
        XCTAssertEqual(quoted("l1\nl2\r\tx"), #""l1\nl2\r\tx""#)
        XCTAssertEqual(quoted("nul\u{0} bell\u{07} esc\u{1B} us\u{1F} del\u{7F}"),
                       #""nul\u0000 bell\u0007 esc\u001B us\u001F del\u007F""#)
        XCTAssertEqual(quoted("日本 müller 😀 \u{2028}"), "\"日本 müller 😀 \u{2028}\"", "non-ASCII as UTF-8")
        XCTAssertEqual(quoted("\"\"\\"), #""\"\"\\""#, "escapes back to back")
    }

    func testEveryControlCharacterRoundTrips() throws {
        let all = String(decoding: (0...0x7F).map { UInt8($0) }, as: UTF8.self)
        let bytes = Array(quoted(all).utf8)
        XCTAssertFalse(bytes.dropFirst().dropLast().contains { $0 < 0x20 || $0 == 0x7F }, "no raw control byte left")
        XCTAssertEqual(try JSONValue.parse(bytes), .string(all))
    }

    func testWriterOutputParsesBack() throws {
        let nasty = "quote\" backslash\\ newline\n nul\u{0} emoji😀 日本"
        var writer = JSONWriter(reservingCapacity: 64)
        writer.beginObject()
        writer.key(nasty); writer.string(nasty)
        writer.key("numbers"); writer.beginArray(); writer.integer(0); writer.integer(-7); writer.integer(1_763_700_000_000); writer.endArray()
        writer.key("flags"); writer.beginArray(); writer.bool(true); writer.null(); writer.endArray()
        writer.key("empty"); writer.beginObject(); writer.endObject()
        writer.endObject()
        XCTAssertEqual(try JSONValue.parse(writer.bytes), .object([
            nasty: .string(nasty),
            "numbers": .array([.number("0"), .number("-7"), .number("1763700000000")]),
            "flags": .array([.bool(true), .null]),
            "empty": .object([:]),
        ]))
    }
}

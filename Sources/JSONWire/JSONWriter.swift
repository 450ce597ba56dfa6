/// Writes JSON straight into a byte buffer, members in the order they are written. The caller
/// opens and closes containers; the writer places the commas and colons.
public struct JSONWriter: Sendable {
    public private(set) var bytes: [UInt8] = []
    /// True right after a complete value: the next member or element needs a comma first.
    private var followsValue = false

    public init(reservingCapacity capacity: Int = 0) {
        bytes.reserveCapacity(capacity)
    }

    public mutating func beginObject() { open(UInt8(ascii: "{")) }
    public mutating func endObject() { close(UInt8(ascii: "}")) }
    public mutating func beginArray() { open(UInt8(ascii: "[")) }
    public mutating func endArray() { close(UInt8(ascii: "]")) }

    /// A member's name; its value comes next.
    public mutating func key(_ name: String) {
        separate()
        Self.appendQuoted(name, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        followsValue = false
    }

    public mutating func string(_ text: String) {
        separate()
        Self.appendQuoted(text, to: &bytes)
        followsValue = true
    }

    public mutating func integer(_ value: Int64) {
        separate()
        Self.appendDecimal(Int(value), to: &bytes)
        followsValue = true
    }

    /// `value`'s decimal digits (and sign) written straight into `out`, without a String made
    /// for them: the same text as `String(value)`. Log lines write a few per line, and a
    /// completion's id arrays a thousand (`PostgresArrayLiteral`).
    public static func appendDecimal(_ value: Int, to out: inout [UInt8]) {
        if value < 0 { out.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        // Least significant first into a buffer on the stack (20 digits hold any Int), then out in order.
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &digits) { buffer in
            var count = 0
            repeat {
                buffer[count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            } while magnitude > 0
            while count > 0 {
                count -= 1
                out.append(buffer[count])
            }
        }
    }

    public mutating func bool(_ value: Bool) { literal(value ? "true" : "false") }
    public mutating func null() { literal("null") }

    private mutating func literal(_ text: StaticString) {
        separate()
        bytes.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
        followsValue = true
    }

    private mutating func open(_ bracket: UInt8) {
        separate()
        bytes.append(bracket)
        followsValue = false
    }

    private mutating func close(_ bracket: UInt8) {
        bytes.append(bracket)
        followsValue = true
    }

    private mutating func separate() {
        if followsValue { bytes.append(UInt8(ascii: ",")) }
    }

    // MARK: the string escaper

    /// `"text"` with JSON string escaping, the one escaper of the codebase: `"` and `\` get a
    /// backslash; \n \r \t by name; other control characters and DEL as \u00XX (upper-case hex);
    /// everything else, all of non-ASCII included, as its UTF-8 bytes.
    public static func appendQuoted(_ text: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { utf8 in
            // Copies runs of plain bytes at once; only the bytes that need escaping stop the run.
            var runStart = 0
            for (position, byte) in utf8.enumerated() where byte < 0x20 || byte == 0x7F || byte == 0x22 || byte == 0x5C {
                out.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<position]))
                appendEscape(of: byte, to: &out)
                runStart = position + 1
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
        }
        out.append(UInt8(ascii: "\""))
    }

    private static func appendEscape(of byte: UInt8, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\\"))
        switch byte {
        case 0x22, 0x5C: out.append(byte)
        case 0x0A: out.append(UInt8(ascii: "n"))
        case 0x0D: out.append(UInt8(ascii: "r"))
        case 0x09: out.append(UInt8(ascii: "t"))
        default:
            let hex: StaticString = "0123456789ABCDEF"
            out.append(UInt8(ascii: "u"))
            out.append(UInt8(ascii: "0"))
            out.append(UInt8(ascii: "0"))
            out.append(hex.utf8Start[Int(byte >> 4)])
            out.append(hex.utf8Start[Int(byte & 0xF)])
        }
    }
}

extension JSONValue {
    /// Deeper nesting of arrays and objects is refused, so a hostile body cannot exhaust the stack.
    public static let maximumDepth = 64

    /// Parses exactly one JSON value (surrounding whitespace allowed), strictly: no trailing
    /// data, comments, leading zeros, raw control characters, bad escapes, lone surrogates or
    /// invalid UTF-8.
    public static func parse(_ bytes: some Collection<UInt8>) throws(JSONParseError) -> JSONValue {
        let parsed = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(JSONParseError) in try JSONParser.parse(buffer) }
        }
        if let parsed { return try parsed.get() }
        let copy = Array(bytes)
        return try copy.withUnsafeBufferPointer { buffer in
            Result { () throws(JSONParseError) in try JSONParser.parse(buffer) }
        }.get()
    }
}

/// A recursive-descent parser over raw bytes: no Character or String.Index work, and each
/// string is built once from its UTF-8 bytes.
private struct JSONParser {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0

    private init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) throws(JSONParseError) -> JSONValue {
        var parser = JSONParser(bytes)
        let value = try parser.value(depth: 0)
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw parser.failure("unexpected data after the value") }
        return value
    }

    private func failure(_ reason: String, at offset: Int? = nil) -> JSONParseError {
        let offset = offset ?? index
        return JSONParseError(offset < bytes.count ? reason : "unexpected end of input", offset: offset)
    }

    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipWhitespace() {
        while let byte = current, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { index += 1 }
    }

    private mutating func value(depth: Int) throws(JSONParseError) -> JSONValue {
        skipWhitespace()
        switch current {
        case UInt8(ascii: "\"")?: return .string(try string())
        case UInt8(ascii: "{")?: return try object(depth: depth)
        case UInt8(ascii: "[")?: return try array(depth: depth)
        case UInt8(ascii: "t")?: return try word("true", meaning: .bool(true))
        case UInt8(ascii: "f")?: return try word("false", meaning: .bool(false))
        case UInt8(ascii: "n")?: return try word("null", meaning: .null)
        case UInt8(ascii: "-")?, (UInt8(ascii: "0")...UInt8(ascii: "9"))?: return .number(try number())
        default: throw failure("unexpected character")
        }
    }

    private mutating func word(_ text: StaticString, meaning: JSONValue) throws(JSONParseError) -> JSONValue {
        let start = index
        let expected = UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
        guard bytes.count - index >= expected.count,
              UnsafeBufferPointer(rebasing: bytes[index..<index + expected.count]).elementsEqual(expected) else {
            throw failure("invalid literal", at: start)
        }
        index += expected.count
        return meaning
    }

    // MARK: containers

    private mutating func enter(_ depth: Int) throws(JSONParseError) {
        guard depth < JSONValue.maximumDepth else {
            throw failure("nesting deeper than \(JSONValue.maximumDepth) levels")
        }
        index += 1  // the opening bracket
        skipWhitespace()
    }

    /// After a member or element: true when a ',' announces another, false at `close`.
    private mutating func another(before close: UInt8) throws(JSONParseError) -> Bool {
        skipWhitespace()
        switch current {
        case UInt8(ascii: ",")?: index += 1; return true
        case close?: index += 1; return false
        default: throw failure(close == UInt8(ascii: "}") ? "expected ',' or '}'" : "expected ',' or ']'")
        }
    }

    private mutating func object(depth: Int) throws(JSONParseError) -> JSONValue {
        try enter(depth)
        if current == UInt8(ascii: "}") {
            index += 1
            return .object([:])
        }
        // Gathered in order, then hashed into a table sized once: inserting one by one would regrow
        // and rehash it at every power of two (an Apple transaction has some twenty members).
        var members: [(String, JSONValue)] = []
        members.reserveCapacity(16)
        repeat {
            skipWhitespace()
            guard current == UInt8(ascii: "\"") else { throw failure("expected a member name") }
            let key = try string()
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { throw failure("expected ':'") }
            index += 1
            members.append((key, try value(depth: depth + 1)))
        } while try another(before: UInt8(ascii: "}"))
        return .object(Dictionary(members, uniquingKeysWith: { _, last in last }))
    }

    private mutating func array(depth: Int) throws(JSONParseError) -> JSONValue {
        try enter(depth)
        var items: [JSONValue] = []
        if current == UInt8(ascii: "]") {
            index += 1
            return .array(items)
        }
        repeat {
            items.append(try value(depth: depth + 1))
        } while try another(before: UInt8(ascii: "]"))
        return .array(items)
    }

    // MARK: numbers

    /// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, returned as written.
    private mutating func number() throws(JSONParseError) -> String {
        let start = index
        if current == UInt8(ascii: "-") { index += 1 }
        if current == UInt8(ascii: "0") {
            index += 1
            if let next = current, isDigit(next) { throw failure("leading zero in a number", at: index - 1) }
        } else if digitRun() == 0 {
            throw failure("invalid number")
        }
        if current == UInt8(ascii: ".") {
            index += 1
            guard digitRun() > 0 else { throw failure("invalid number: no digit after '.'") }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            index += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            guard digitRun() > 0 else { throw failure("invalid number: no digit in the exponent") }
        }
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte &- UInt8(ascii: "0") < 10 }

    private mutating func digitRun() -> Int {
        let start = index
        while let byte = current, isDigit(byte) { index += 1 }
        return index - start
    }

    // MARK: strings

    /// From the opening quote. Without escapes (the usual case) the bytes become the String
    /// directly; UTF-8 is checked only when a byte is outside ASCII.
    private mutating func string() throws(JSONParseError) -> String {
        index += 1
        let start = index
        var orOfBytes: UInt8 = 0
        while let byte = current {
            switch byte {
            case UInt8(ascii: "\""):
                let raw = UnsafeBufferPointer(rebasing: bytes[start..<index])
                index += 1
                if orOfBytes < 0x80 { return String(decoding: raw, as: UTF8.self) }
                guard let text = String(validating: raw, as: UTF8.self) else { throw failure("invalid UTF-8 in string", at: start) }
                return text
            case UInt8(ascii: "\\"):
                return try escapedString(from: start)
            case ..<0x20:
                throw failure("control character in string")
            default:
                orOfBytes |= byte
                index += 1
            }
        }
        throw failure("unterminated string")
    }

    /// The slow path: decodes into a byte buffer, then checks the whole result is UTF-8.
    private mutating func escapedString(from start: Int) throws(JSONParseError) -> String {
        var decoded: [UInt8] = []
        decoded.reserveCapacity(index - start + 16)
        decoded.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index]))
        while let byte = current {
            if byte == UInt8(ascii: "\"") {
                index += 1
                guard let text = String(validating: decoded, as: UTF8.self) else { throw failure("invalid UTF-8 in string", at: start) }
                return text
            }
            guard byte >= 0x20 else { throw failure("control character in string") }
            index += 1
            guard byte == UInt8(ascii: "\\") else {
                decoded.append(byte)
                continue
            }
            switch current {
            case UInt8(ascii: "\"")?, UInt8(ascii: "\\")?, UInt8(ascii: "/")?: decoded.append(bytes[index])
            case UInt8(ascii: "b")?: decoded.append(0x08)
            case UInt8(ascii: "f")?: decoded.append(0x0C)
            case UInt8(ascii: "n")?: decoded.append(0x0A)
            case UInt8(ascii: "r")?: decoded.append(0x0D)
            case UInt8(ascii: "t")?: decoded.append(0x09)
            case UInt8(ascii: "u")?:
                index += 1
                appendUTF8(of: try escapedScalar(), to: &decoded)
                continue
            default: throw failure("invalid escape")
            }
            index += 1
        }
        throw failure("unterminated string")
    }

    /// The code point of `XXXX` (just after `\u`), or of a `\uD8xx\uDCxx` surrogate pair.
    private mutating func escapedScalar() throws(JSONParseError) -> UInt32 {
        let start = index - 2
        let first = try fourHexDigits()
        switch first {
        case 0xDC00...0xDFFF:
            throw failure("lone low surrogate", at: start)
        case 0xD800...0xDBFF:
            guard bytes.count - index >= 2, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                throw failure("lone high surrogate", at: start)
            }
            index += 2
            let second = try fourHexDigits()
            guard (0xDC00...0xDFFF).contains(second) else { throw failure("lone high surrogate", at: start) }
            return 0x10000 + (first - 0xD800) << 10 + (second - 0xDC00)
        default:
            return first
        }
    }

    private mutating func fourHexDigits() throws(JSONParseError) -> UInt32 {
        guard bytes.count - index >= 4 else { throw failure("invalid \\u escape", at: bytes.count) }
        var code: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index], lower = byte | 0x20  // ASCII letters in lower case
            let nibble: UInt8
            if isDigit(byte) {
                nibble = byte - UInt8(ascii: "0")
            } else if lower >= UInt8(ascii: "a") && lower <= UInt8(ascii: "f") {
                nibble = lower - UInt8(ascii: "a") + 10
            } else {
                throw failure("invalid \\u escape")
            }
            code = code << 4 | UInt32(nibble)
            index += 1
        }
        return code
    }

    /// A scalar (never a surrogate here) as 1 to 4 UTF-8 bytes.
    private func appendUTF8(of code: UInt32, to out: inout [UInt8]) {
        switch code {
        case ..<0x80:
            out.append(UInt8(code))
        case ..<0x800:
            out.append(UInt8(0xC0 | code >> 6))
            out.append(UInt8(0x80 | code & 0x3F))
        case ..<0x10000:
            out.append(UInt8(0xE0 | code >> 12))
            out.append(UInt8(0x80 | code >> 6 & 0x3F))
            out.append(UInt8(0x80 | code & 0x3F))
        default:
            out.append(UInt8(0xF0 | code >> 18))
            out.append(UInt8(0x80 | code >> 12 & 0x3F))
            out.append(UInt8(0x80 | code >> 6 & 0x3F))
            out.append(UInt8(0x80 | code & 0x3F))
        }
    }
}

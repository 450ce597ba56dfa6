/// A strict, allocation-light reader for one flat JSON object: the request bodies and NDJSON lines
/// of the ingest API. Hand-written rather than JSONSerialization so that (a) wrong types are seen exactly
/// (no NSNumber/Bool bridging surprises), (b) the bulk loader's cost per line stays small, and
/// (c) invalid UTF-8, lone surrogates and trailing garbage are rejected instead of repaired.
/// Only string members are decoded; other values are validated and reported by type.
enum JSONMember: Equatable {
    case string(String)
    case number, bool, null, object, array

    /// For "x must be a string" style messages.
    var typeName: String {
        switch self {
        case .string: "string"
        case .number: "number"
        case .bool: "boolean"
        case .null: "null"
        case .object: "object"
        case .array: "array"
        }
    }
}

struct JSONObjectScanner {
    /// Deeper nesting is refused so a hostile body cannot exhaust the stack.
    static let maximumDepth = 64

    /// Parses `bytes` as exactly one JSON object (surrounding whitespace allowed). Duplicate keys:
    /// the last one wins, as in most parsers.
    static func parseObject(_ bytes: UnsafeBufferPointer<UInt8>) throws -> [String: JSONMember] {
        var scanner = JSONObjectScanner(bytes: bytes)
        scanner.skipWhitespace()
        guard scanner.index < bytes.count else { throw IngestValidationError("malformed JSON: empty document") }
        guard bytes[scanner.index] == UInt8(ascii: "{") else {
            // Tell "valid JSON, wrong shape" from "not JSON at all".
            _ = try scanner.value(depth: 0)
            try scanner.expectEnd()
            throw IngestValidationError("body must be a JSON object")
        }
        let members = try scanner.object(depth: 0, collect: true)
        try scanner.expectEnd()
        return members
    }

    static func parseObject(_ bytes: [UInt8]) throws -> [String: JSONMember] {
        try bytes.withUnsafeBufferPointer { try parseObject($0) }
    }

    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0

    private init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    private func malformed(_ what: String) -> IngestValidationError {
        IngestValidationError(index >= bytes.count
            ? "malformed JSON: unexpected end of input"
            : "malformed JSON: \(what) at byte \(index + 1)")
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func expectEnd() throws {
        skipWhitespace()
        if index < bytes.count { throw malformed("unexpected data after the JSON value") }
    }

    private mutating func expect(_ byte: UInt8, _ what: String) throws {
        skipWhitespace()
        guard index < bytes.count, bytes[index] == byte else { throw malformed("expected \(what)") }
        index += 1
    }

    /// `collect` is false for nested objects: they are validated, not kept.
    private mutating func object(depth: Int, collect: Bool) throws -> [String: JSONMember] {
        guard depth < Self.maximumDepth else { throw malformed("nesting too deep") }
        index += 1  // "{"
        var members: [String: JSONMember] = [:]
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return members
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw malformed("expected a member name") }
            let key = try string()
            try expect(UInt8(ascii: ":"), "':'")
            let member = try value(depth: depth + 1)
            if collect { members[key] = member }
            skipWhitespace()
            guard index < bytes.count else { throw malformed("unterminated object") }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"): index += 1; return members
            default: throw malformed("expected ',' or '}'")
            }
        }
    }

    private mutating func array(depth: Int) throws {
        guard depth < Self.maximumDepth else { throw malformed("nesting too deep") }
        index += 1  // "["
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return
        }
        while true {
            _ = try value(depth: depth + 1)
            skipWhitespace()
            guard index < bytes.count else { throw malformed("unterminated array") }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"): index += 1; return
            default: throw malformed("expected ',' or ']'")
            }
        }
    }

    private mutating func value(depth: Int) throws -> JSONMember {
        skipWhitespace()
        guard index < bytes.count else { throw malformed("expected a value") }
        switch bytes[index] {
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "{"): _ = try object(depth: depth, collect: false); return .object
        case UInt8(ascii: "["): try array(depth: depth); return .array
        case UInt8(ascii: "t"): try literal("true"); return .bool
        case UInt8(ascii: "f"): try literal("false"); return .bool
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try number(); return .number
        default: throw malformed("unexpected character")
        }
    }

    private mutating func literal(_ word: StaticString) throws {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw malformed("invalid literal") }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] {
            throw malformed("invalid literal")
        }
        index += count
    }

    private mutating func digits() -> Int {
        let start = index
        while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
        return index - start
    }

    /// RFC 8259 number grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
    private mutating func number() throws {
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count else { throw malformed("invalid number") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else if digits() == 0 {
            throw malformed("invalid number")
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { throw malformed("invalid number") }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard digits() > 0 else { throw malformed("invalid number") }
        }
    }

    /// Decodes a string starting at the opening quote. The common case (no escapes) is one scan
    /// plus one UTF-8 validation.
    private mutating func string() throws -> String {
        index += 1  // opening quote
        let start = index
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let raw = UnsafeBufferPointer(rebasing: bytes[start..<index])
                guard let text = String(validating: raw, as: UTF8.self) else { throw malformed("invalid UTF-8") }
                index += 1
                return text
            }
            if byte == UInt8(ascii: "\\") { return try escapedString(from: start) }
            guard byte >= 0x20 else { throw malformed("control character in string") }
            index += 1
        }
        throw malformed("unterminated string")
    }

    private mutating func escapedString(from start: Int) throws -> String {
        var out: [UInt8] = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                guard let text = String(validating: out, as: UTF8.self) else { throw malformed("invalid UTF-8") }
                return text
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { break }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"): try appendUnicodeEscape(to: &out)
                default: index -= 1; throw malformed("invalid escape")
                }
            default:
                guard byte >= 0x20 else { throw malformed("control character in string") }
                out.append(byte)
                index += 1
            }
        }
        throw malformed("unterminated string")
    }

    private mutating func hex4() throws -> UInt32 {
        guard index + 4 <= bytes.count else { throw malformed("invalid \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let nibble: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = byte - UInt8(ascii: "A") + 10
            default: throw malformed("invalid \\u escape")
            }
            value = value << 4 | UInt32(nibble)
            index += 1
        }
        return value
    }

    /// `\uXXXX`, joining UTF-16 surrogate pairs; a lone surrogate is malformed.
    private mutating func appendUnicodeEscape(to out: inout [UInt8]) throws {
        var code = try hex4()
        if (0xD800...0xDBFF).contains(code) {
            guard index + 2 <= bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                throw malformed("unpaired surrogate")
            }
            index += 2
            let low = try hex4()
            guard (0xDC00...0xDFFF).contains(low) else { throw malformed("unpaired surrogate") }
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
        } else if (0xDC00...0xDFFF).contains(code) {
            throw malformed("unpaired surrogate")
        }
        guard let scalar = Unicode.Scalar(code) else { throw malformed("invalid \\u escape") }
        out.append(contentsOf: UTF8.encode(scalar)!)
    }
}

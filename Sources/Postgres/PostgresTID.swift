/// A row version's physical address (`ctid`): its heap page and its line on that page. It names
/// one version of a row, so it is stable only while nothing updates the row; a statement that
/// finds rows by it must check that each row is still the one it means.
public struct PostgresTID: Sendable, Hashable, CustomStringConvertible {
    public let block: UInt32
    public let offset: UInt16

    public init(block: UInt32, offset: UInt16) {
        self.block = block
        self.offset = offset
    }

    /// `tid`'s text form, as the server writes it: `(block,offset)`.
    public var description: String { "(\(block),\(offset))" }
}

extension PostgresTID: PostgresTextDecodable {
    /// A claim decodes one per job: the bytes are read in place, digit by digit.
    public init?(postgresText text: String) {
        var text = text
        guard let (block, offset) = text.withUTF8({ Self.parse($0) }) else { return nil }
        self.init(block: block, offset: offset)
    }

    public static func decode(postgresBytes bytes: UnsafeBufferPointer<UInt8>?, column: String) throws -> PostgresTID {
        guard let bytes else { throw PostgresError(kind: .client, message: "column \(column) is NULL, expected PostgresTID") }
        guard let (block, offset) = parse(bytes) else { throw PostgresError(kind: .client, message: "column \(column) is not a PostgresTID") }
        return PostgresTID(block: block, offset: offset)
    }

    private static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> (UInt32, UInt16)? {
        guard bytes.count >= 5, bytes[0] == UInt8(ascii: "("), bytes[bytes.count - 1] == UInt8(ascii: ")") else { return nil }
        var index = 1
        func number(upTo limit: UInt64, endingAt end: Int) -> UInt64? {
            var value: UInt64 = 0
            let start = index
            while index < end, bytes[index] != UInt8(ascii: ",") {
                let digit = bytes[index] &- UInt8(ascii: "0")
                guard digit < 10, index - start < 10 else { return nil }
                value = value * 10 + UInt64(digit)
                index += 1
            }
            return index > start && value <= limit ? value : nil
        }
        guard let block = number(upTo: UInt64(UInt32.max), endingAt: bytes.count - 1), index < bytes.count - 1 else { return nil }
        index += 1 // the comma
        guard let offset = number(upTo: UInt64(UInt16.max), endingAt: bytes.count - 1), index == bytes.count - 1 else { return nil }
        return (UInt32(block), UInt16(offset))
    }
}

extension PostgresTID: PostgresArrayElement {
    public var arrayLiteralItem: String? { description }
}

/// `tid[]` parameters in PostgreSQL's binary array format (what `array_recv` reads, each element
/// as `tidrecv` reads it): nothing for the server to parse.
enum PostgresTIDArray {
    /// `tid`'s type OID, which the server checks against the parameter's element type.
    static let elementType: UInt32 = 27

    static func bind(_ items: [PostgresTID]) -> PostgresBind {
        var out: [UInt8] = []
        out.reserveCapacity(20 + items.count * 10)
        // Header: dimensions, the has-null flag, the element type; then the one dimension's
        // length and lower bound. An empty array is zero dimensions.
        append(UInt32(items.isEmpty ? 0 : 1), to: &out)
        append(UInt32(0), to: &out)
        append(elementType, to: &out)
        if !items.isEmpty {
            append(UInt32(items.count), to: &out)
            append(UInt32(1), to: &out)
        }
        for item in items {
            append(UInt32(6), to: &out)
            append(item.block, to: &out)
            withUnsafeBytes(of: item.offset.bigEndian) { out.append(contentsOf: $0) }
        }
        return PostgresBind(binary: out)
    }

    private static func append(_ value: UInt32, to out: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { out.append(contentsOf: $0) }
    }
}

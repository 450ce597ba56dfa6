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

    /// `(block,offset)`: two unsigned numbers in parentheses, read with the integer cells' reader.
    private static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> (UInt32, UInt16)? {
        guard bytes.count >= 5, bytes[0] == UInt8(ascii: "("), bytes[bytes.count - 1] == UInt8(ascii: ")"),
              let comma = bytes.firstIndex(of: UInt8(ascii: ",")) else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            guard let first = range.first, bytes[first] != UInt8(ascii: "-"), bytes[first] != UInt8(ascii: "+") else { return nil }
            return PostgresInteger.parse(UnsafeBufferPointer(rebasing: bytes[range]))
        }
        guard let block = number(1..<comma).flatMap(UInt32.init(exactly:)),
              let offset = number(comma + 1..<bytes.count - 1).flatMap(UInt16.init(exactly:)) else { return nil }
        return (block, offset)
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
        var out = PostgresBinaryArray.start(count: items.count, hasNull: false, elementType: elementType, reserving: 20 + items.count * 10)
        for item in items {
            PostgresBinaryArray.append(Int32(6), to: &out)
            PostgresBinaryArray.append(item.block, to: &out)
            PostgresBinaryArray.append(item.offset, to: &out)
        }
        return PostgresBind(binary: out)
    }
}

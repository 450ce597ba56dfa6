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
    public init?(postgresText text: String) {
        var block: UInt64 = 0, offset: UInt64 = 0
        var digits = 0
        var part = 0 // 0: before "(", 1: the block, 2: the offset, 3: after ")"
        for byte in text.utf8 {
            switch (part, byte) {
            case (0, UInt8(ascii: "(")): part = 1
            case (1, UInt8(ascii: ",")) where digits > 0: (part, digits) = (2, 0)
            case (2, UInt8(ascii: ")")) where digits > 0: part = 3
            case (1, UInt8(ascii: "0")...UInt8(ascii: "9")), (2, UInt8(ascii: "0")...UInt8(ascii: "9")):
                let digit = UInt64(byte - UInt8(ascii: "0"))
                if part == 1 { block = block * 10 + digit } else { offset = offset * 10 + digit }
                digits += 1
                guard digits <= 10, block <= UInt64(UInt32.max), offset <= UInt64(UInt16.max) else { return nil }
            default: return nil
            }
        }
        guard part == 3 else { return nil }
        self.init(block: UInt32(block), offset: UInt16(offset))
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

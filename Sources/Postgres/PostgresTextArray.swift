/// `text[]` parameters in PostgreSQL's binary array format (what `array_recv` reads): each
/// element's bytes behind its length. Nothing is escaped here and nothing is parsed character by
/// character on the server, where `array_in` over a batch of receipts' payloads took about a fifth
/// of the enqueue's CPU. The statement must take the parameter as `text[]` (a cast, or a text
/// column it is compared with): the format names its element type.
enum PostgresTextArray {
    /// `text`'s type OID, which the server checks against the parameter's element type.
    static let elementType: UInt32 = 25

    /// The binary form, or the text literal when an element holds a NUL: text cannot hold one,
    /// and the literal is refused before sending with the same clear error as any text parameter.
    static func bind<Items: Collection<String?>>(_ items: Items) -> PostgresBind {
        var size = 20, hasNull = false
        for item in items {
            guard let item else { size += 4; hasNull = true; continue }
            if item.containsNUL { return PostgresBind(utf8Text: PostgresArrayLiteral.encode(items)) }
            size += 4 + item.utf8.count
        }
        var out = PostgresBinaryArray.start(count: items.count, hasNull: hasNull, elementType: elementType, reserving: size)
        for item in items {
            guard let item else { PostgresBinaryArray.append(Int32(-1), to: &out); continue }
            PostgresBinaryArray.append(Int32(item.utf8.count), to: &out)
            out.append(contentsOf: item.utf8)
        }
        return PostgresBind(binary: out)
    }
}

/// PostgreSQL's binary array format (what `array_recv` reads), shared by the array binders.
enum PostgresBinaryArray {
    /// The header of a one-dimensional array of `count` elements: dimensions, the has-null flag,
    /// the element type, then the dimension's length and lower bound (an empty array has no
    /// dimension). The elements follow, each its length then its bytes (-1: NULL).
    static func start(count: Int, hasNull: Bool, elementType: UInt32, reserving size: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(size)
        append(Int32(count == 0 ? 0 : 1), to: &out)
        append(Int32(hasNull ? 1 : 0), to: &out)
        append(Int32(bitPattern: elementType), to: &out)
        if count > 0 {
            append(Int32(count), to: &out)
            append(Int32(1), to: &out)
        }
        return out
    }

    static func append<Value: FixedWidthInteger>(_ value: Value, to out: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { out.append(contentsOf: $0) }
    }
}

/// A `bigint[]` parameter in PostgreSQL's binary array format: eight bytes an element, nothing for
/// the server to parse (`array_in` reads a literal of a thousand job ids character by character).
/// Only where the statement takes the parameter as `bigint[]`: the format names its element type,
/// and an `int[]` parameter refuses it, so plain `[Int]` stays a text literal.
public struct PostgresBigintArray: PostgresEncodable, Sendable {
    /// `bigint`'s type OID, which the server checks against the parameter's element type.
    static let elementType: UInt32 = 20
    public let values: [Int]

    public init(_ values: [Int]) { self.values = values }

    public var postgresBind: PostgresBind {
        var out = PostgresBinaryArray.start(count: values.count, hasNull: false, elementType: Self.elementType,
                                            reserving: 20 + values.count * 12)
        for value in values {
            PostgresBinaryArray.append(Int32(8), to: &out)
            PostgresBinaryArray.append(Int64(value), to: &out)
        }
        return PostgresBind(binary: out)
    }
}

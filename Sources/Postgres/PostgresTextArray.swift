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
        var out: [UInt8] = []
        out.reserveCapacity(size)
        // Header: dimensions, the has-null flag, the element type; then the one dimension's
        // length and lower bound. An empty array is zero dimensions.
        append(Int32(items.isEmpty ? 0 : 1), to: &out)
        append(Int32(hasNull ? 1 : 0), to: &out)
        append(Int32(bitPattern: elementType), to: &out)
        if !items.isEmpty {
            append(Int32(items.count), to: &out)
            append(Int32(1), to: &out)
        }
        for item in items {
            guard let item else { append(Int32(-1), to: &out); continue }
            append(Int32(item.utf8.count), to: &out)
            out.append(contentsOf: item.utf8)
        }
        return PostgresBind(binary: out)
    }

    private static func append(_ value: Int32, to out: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { out.append(contentsOf: $0) }
    }
}

import JSONWire

/// The text form of one-dimensional arrays (`{1,2,"a b",NULL}`), both ways.
enum PostgresArrayLiteral {
    /// UTF-8 bytes, built directly: arrays of hundreds of values go out per statement, and
    /// appending scalar by scalar to a String would cost more than the SQL. Text arrays go in
    /// binary (`PostgresTextArray`) unless an element holds a NUL.
    static func encode<Items: Collection<String?>>(_ items: Items) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(items.reduce(2) { $0 + ($1?.utf8.count ?? 4) + 3 })
        out.append(UInt8(ascii: "{"))
        var first = true
        for item in items {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            guard let item else {
                out.append(contentsOf: "NULL".utf8)
                continue
            }
            out.append(UInt8(ascii: "\""))
            // Both are ASCII, so they never occur inside a multibyte UTF-8 sequence; most values
            // (ids, outcomes) hold neither and are copied whole.
            if item.utf8.contains(where: { $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
                for byte in item.utf8 {
                    if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { out.append(UInt8(ascii: "\\")) }
                    out.append(byte)
                }
            } else {
                out.append(contentsOf: item.utf8)
            }
            out.append(UInt8(ascii: "\""))
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// `{1,-2,3}`, digit by digit.
    static func encode(_ integers: [Int]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(2 + integers.count * 12)
        out.append(UInt8(ascii: "{"))
        for (index, integer) in integers.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            JSONWriter.appendDecimal(integer, to: &out)
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// Parses the server's output for a one-dimensional array.
    static func decode(_ text: String) throws -> [String?] {
        var scalars = Array(text.unicodeScalars)
        guard scalars.first == "{", scalars.last == "}" else {
            throw PostgresError(kind: .client, message: "not an array literal")
        }
        scalars = Array(scalars.dropFirst().dropLast())
        var items: [String?] = []
        var index = 0
        if scalars.isEmpty { return [] }
        while index <= scalars.count {
            var item = String.UnicodeScalarView()
            var quoted = false
            if index < scalars.count, scalars[index] == "\"" {
                quoted = true
                index += 1
                while index < scalars.count, scalars[index] != "\"" {
                    if scalars[index] == "\\" { index += 1 }
                    if index < scalars.count { item.append(scalars[index]) }
                    index += 1
                }
                index += 1 // closing quote
            } else {
                while index < scalars.count, scalars[index] != "," {
                    item.append(scalars[index])
                    index += 1
                }
            }
            let value = String(item)
            items.append(!quoted && value == "NULL" ? nil : value)
            index += 1 // the comma
        }
        return items
    }
}

/// Rows in COPY text format: tab-separated, `\N` for NULL, backslash escapes.
public enum CopyTextEncoder {
    public static func encode(_ rows: [[String?]]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(rows.count * 64)
        for row in rows { append(row, to: &out) }
        return out
    }

    public static func append(_ row: [String?], to out: inout [UInt8]) {
        for (index, value) in row.enumerated() {
            if index > 0 { out.append(UInt8(ascii: "\t")) }
            guard let value else {
                out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "N")])
                continue
            }
            for byte in value.utf8 {
                switch byte {
                case UInt8(ascii: "\\"): out.append(contentsOf: [92, 92])
                case UInt8(ascii: "\t"): out.append(contentsOf: [92, UInt8(ascii: "t")])
                case UInt8(ascii: "\n"): out.append(contentsOf: [92, UInt8(ascii: "n")])
                case UInt8(ascii: "\r"): out.append(contentsOf: [92, UInt8(ascii: "r")])
                default: out.append(byte)
                }
            }
        }
        out.append(UInt8(ascii: "\n"))
    }
}

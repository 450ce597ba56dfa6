/// The text form of one-dimensional arrays (`{1,2,"a b",NULL}`), both ways.
enum PostgresArrayLiteral {
    static func encode(_ items: [String?]) -> String {
        var out = "{"
        for (index, item) in items.enumerated() {
            if index > 0 { out += "," }
            guard let item else { out += "NULL"; continue }
            out += "\""
            for ch in item.unicodeScalars {
                if ch == "\"" || ch == "\\" { out += "\\" }
                out.unicodeScalars.append(ch)
            }
            out += "\""
        }
        return out + "}"
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

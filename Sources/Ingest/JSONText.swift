/// Minimal JSON output for the API's small, fixed-shape responses: members keep the documented order.
enum JSONText {
    enum Value {
        case string(String?)
        case int(Int64)
        case strings([String])
    }

    static func object(_ members: KeyValuePairs<String, Value>) -> [UInt8] {
        var out = "{"
        for (position, member) in members.enumerated() {
            if position > 0 { out += "," }
            appendString(member.key, to: &out)
            out += ":"
            switch member.value {
            case .string(nil): out += "null"
            case .string(let text?): appendString(text, to: &out)
            case .int(let number): out += String(number)
            case .strings(let items):
                out += "["
                for (i, item) in items.enumerated() {
                    if i > 0 { out += "," }
                    appendString(item, to: &out)
                }
                out += "]"
            }
        }
        out += "}"
        return Array(out.utf8)
    }

    static func appendString(_ text: String, to out: inout String) {
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}

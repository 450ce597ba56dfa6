/// Helpers for the Prometheus text exposition format 0.0.4.

/// Names are fixed at registration by code, so an invalid one is a programmer error.
func validateNames(metricName: String, labelNames: [String]) {
    precondition(isValidName(metricName, allowColon: true), "invalid metric name \"\(metricName)\"")
    for label in labelNames {
        precondition(isValidName(label, allowColon: false), "invalid label name \"\(label)\" on \(metricName)")
    }
    precondition(Set(labelNames).count == labelNames.count, "duplicate label names on \(metricName)")
}

/// `[a-zA-Z_:][a-zA-Z0-9_:]*` for metrics, `[a-zA-Z_][a-zA-Z0-9_]*` for labels.
private func isValidName(_ name: String, allowColon: Bool) -> Bool {
    guard let first = name.utf8.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return false }
    return name.utf8.allSatisfy { byte in
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"): true
        case UInt8(ascii: ":"): allowColon
        default: false
        }
    }
}

func appendHeader(name: String, help: String, type: String, into out: inout String) {
    out.append("# HELP \(name) ")
    appendEscaped(help, quotes: false, into: &out)
    out.append("\n# TYPE \(name) \(type)\n")
}

/// `name{a="x",b="y"} value`
func appendSample(_ name: String, labelNames: [String], values: [String], value: Double, into out: inout String) {
    out.append(name)
    if !labelNames.isEmpty {
        out.append("{")
        for (index, (label, labelValue)) in zip(labelNames, values).enumerated() {
            if index > 0 { out.append(",") }
            out.append(label)
            out.append("=\"")
            appendEscaped(labelValue, quotes: true, into: &out)
            out.append("\"")
        }
        out.append("}")
    }
    out.append(" ")
    out.append(formatNumber(value))
    out.append("\n")
}

/// HELP text escapes `\` and newline; label values also escape `"`.
private func appendEscaped(_ text: String, quotes: Bool, into out: inout String) {
    for character in text.unicodeScalars {
        switch character {
        case "\\": out.append("\\\\")
        case "\n": out.append("\\n")
        case "\"" where quotes: out.append("\\\"")
        default: out.unicodeScalars.append(character)
        }
    }
}

/// Splits a no-transaction migration into its statements: at a `;` that ends a line outside a
/// quoted string, a quoted name, a comment and a dollar-quoted body, so that a `DO $$ … ; … $$;`
/// block (a batched backfill that COMMITs as it goes) stays one statement.
enum MigrationStatements {
    private enum Quote: Equatable {
        case single, double, blockComment
        case dollar(String)
    }

    static func split(_ sql: String) -> [String] {
        var statements: [String] = []
        var current = ""
        var quote: Quote? = nil
        for line in sql.split(separator: "\n", omittingEmptySubsequences: false) {
            current += line + "\n"
            if endsStatement(Array(line.unicodeScalars), quote: &quote) {
                statements.append(current)
                current = ""
            }
        }
        statements.append(current)
        return statements
    }

    /// Scans one line, carrying the open quote across lines; true when the line's last
    /// significant character is a `;` outside every quote.
    private static func endsStatement(_ line: [Unicode.Scalar], quote: inout Quote?) -> Bool {
        var lastSignificant: Unicode.Scalar? = nil
        var index = 0
        while index < line.count {
            let character = line[index]
            let next: Unicode.Scalar? = index + 1 < line.count ? line[index + 1] : nil
            switch quote {
            case .single?:
                if character == "'" { quote = nil }
            case .double?:
                if character == "\"" { quote = nil }
            case .blockComment?:
                if character == "*" && next == "/" { quote = nil; index += 1 }
            case .dollar(let tag)?:
                if character == "$", let closing = dollarTag(line, at: index), closing == tag {
                    quote = nil
                    index += closing.unicodeScalars.count - 1
                    lastSignificant = "$"
                }
            case nil:
                if character == "-" && next == "-" { return lastSignificant == ";" }
                if character == "/" && next == "*" { quote = .blockComment; index += 1 }
                else if character == "'" { quote = .single; lastSignificant = character }
                else if character == "\"" { quote = .double; lastSignificant = character }
                else if character == "$", let tag = dollarTag(line, at: index) {
                    quote = .dollar(tag)
                    index += tag.unicodeScalars.count - 1
                    lastSignificant = "$"
                } else if !character.properties.isWhitespace {
                    lastSignificant = character
                }
            }
            index += 1
        }
        return quote == nil && lastSignificant == ";"
    }

    /// `$$` or `$name$` starting at `index` (a `$1` parameter is not one).
    private static func dollarTag(_ line: [Unicode.Scalar], at index: Int) -> String? {
        var end = index + 1
        while end < line.count, line[end] != "$" {
            let scalar = line[end]
            guard scalar == "_" || scalar.properties.isAlphabetic || (end > index + 1 && ("0"..."9").contains(scalar)) else { return nil }
            end += 1
        }
        guard end < line.count else { return nil }
        return String(String.UnicodeScalarView(line[index...end]))
    }
}

/// Reads a migration's text the way PostgreSQL does, line by line, keeping track of quoted
/// strings, quoted names, comments and dollar-quoted bodies:
///   * `split` cuts a no-transaction migration into its statements, at a `;` that ends a line
///     outside all of them, so that a `DO $$ … ; … $$;` block (a batched backfill that COMMITs as
///     it goes) stays one statement;
///   * `withoutComments` drops what PostgreSQL never sees (`--` comments and blank lines outside
///     quoted text), for a checksum that comments do not change.
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
            if scan(Array(line.unicodeScalars), quote: &quote).endsStatement {
                statements.append(current)
                current = ""
            }
        }
        statements.append(current)
        return statements
    }

    /// The text without its `--` comments (whole lines, and the ends of lines after code) and
    /// without blank lines, where these are outside quoted text and bodies; lines inside a
    /// string, a block comment or a function body are kept as they are.
    static func withoutComments(_ sql: String) -> String {
        var kept: [String] = []
        var quote: Quote? = nil
        for line in sql.split(separator: "\n", omittingEmptySubsequences: false) {
            let startsOutside = quote == nil
            let scalars = Array(line.unicodeScalars)
            let found = scan(scalars, quote: &quote)
            var text = String(line)
            if let comment = found.commentStart {
                text = String(String.UnicodeScalarView(scalars[..<comment]))
                while let last = text.unicodeScalars.last, last.properties.isWhitespace { text.unicodeScalars.removeLast() }
            }
            if startsOutside && text.allSatisfy(\.isWhitespace) { continue }
            kept.append(text)
        }
        return kept.joined(separator: "\n")
    }

    /// Scans one line, carrying the open quote across lines. `endsStatement`: the line's last
    /// significant character is a `;` outside every quote; `commentStart`: where a `--` comment
    /// outside every quote begins.
    private static func scan(_ line: [Unicode.Scalar], quote: inout Quote?) -> (endsStatement: Bool, commentStart: Int?) {
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
                if character == "-" && next == "-" { return (lastSignificant == ";", index) }
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
        return (quote == nil && lastSignificant == ";", nil)
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

/// A fragment of HTML. Interpolated `String`s are escaped; only other `HTML` values go in
/// as they are. So every value that came from the database (user ids, order ids, Apple's error
/// text — all attacker-controlled) is escaped by construction, not by remembering to.
public struct HTML: Sendable, ExpressibleByStringInterpolation, CustomStringConvertible {
    public private(set) var rendered: String

    /// Trusted markup written in this module (never a value from outside).
    public init(trusted markup: String) { rendered = markup }
    public init(stringLiteral value: String) { rendered = value }
    public init(stringInterpolation: Interpolation) { rendered = stringInterpolation.output }

    public var description: String { rendered }

    public static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text.unicodeScalars {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.unicodeScalars.append(character)
            }
        }
        return out
    }

    public static func join(_ parts: [HTML], separator: HTML = "") -> HTML {
        HTML(trusted: parts.map(\.rendered).joined(separator: separator.rendered))
    }

    public struct Interpolation: StringInterpolationProtocol {
        var output = ""
        public init(literalCapacity: Int, interpolationCount: Int) { output.reserveCapacity(literalCapacity * 2) }
        public mutating func appendLiteral(_ literal: String) { output += literal }
        public mutating func appendInterpolation(_ html: HTML) { output += html.rendered }
        public mutating func appendInterpolation(_ parts: [HTML]) { output += parts.map(\.rendered).joined() }
        public mutating func appendInterpolation(_ text: String) { output += HTML.escape(text) }
        /// Missing values read as a dash.
        public mutating func appendInterpolation(_ text: String?) { output += text.map(HTML.escape) ?? "–" }
        public mutating func appendInterpolation<Number: BinaryInteger>(_ number: Number) { output += String(number) }
        public mutating func appendInterpolation<Number: BinaryInteger>(_ number: Number?) { output += number.map { String($0) } ?? "–" }
    }
}

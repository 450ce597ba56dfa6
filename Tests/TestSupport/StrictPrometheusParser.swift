import Foundation

/// A deliberately strict reader of text format 0.0.4, so render bugs fail tests instead of scrapes.
public struct StrictPrometheusParser {
    public struct Sample: Equatable, Sendable {
        public var name: String
        public var labels: [String: String]
        public var labelOrder: [String]
        public var value: Double
    }

    public struct Family: Sendable {
        public var name: String
        public var help: String
        public var type: String
        public var samples: [Sample] = []
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    public static func parse(_ text: String) throws -> [Family] {
        guard text.isEmpty || text.hasSuffix("\n") else { throw Failure(description: "missing final newline") }
        var families: [Family] = []
        var pendingHelp: (name: String, help: String)?
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().enumerated() {
            func fail(_ why: String) -> Failure { Failure(description: "line \(number + 1) \(why): \(line)") }
            if line.hasPrefix("# HELP ") {
                guard pendingHelp == nil else { throw fail("HELP without TYPE before") }
                let rest = line.dropFirst(7)
                guard let space = rest.firstIndex(of: " ") else { throw fail("HELP without text") }
                let name = String(rest[..<space])
                guard isName(name, colon: true) else { throw fail("bad metric name") }
                guard !families.contains(where: { $0.name == name }) else { throw fail("duplicate family") }
                pendingHelp = (name, try unescape(rest[rest.index(after: space)...], quotes: false).orThrow(fail("bad HELP escape")))
            } else if line.hasPrefix("# TYPE ") {
                let parts = line.dropFirst(7).split(separator: " ", omittingEmptySubsequences: false)
                guard parts.count == 2, let help = pendingHelp, help.name == parts[0] else { throw fail("TYPE must follow its HELP") }
                guard ["counter", "gauge", "histogram"].contains(parts[1]) else { throw fail("unknown type") }
                if let previous = families.last, previous.name >= help.name { throw fail("families not sorted") }
                families.append(Family(name: help.name, help: help.help, type: String(parts[1])))
                pendingHelp = nil
            } else {
                guard pendingHelp == nil, var family = families.popLast() else { throw fail("sample before HELP/TYPE") }
                let sample = try parseSample(line).orThrow(fail("malformed sample"))
                let allowed = family.type == "histogram"
                    ? ["_bucket", "_sum", "_count"].map { family.name + $0 } : [family.name]
                guard allowed.contains(sample.name) else { throw fail("sample name does not match family") }
                guard !family.samples.contains(where: { $0.name == sample.name && $0.labels == sample.labels }) else {
                    throw fail("duplicate series")
                }
                family.samples.append(sample)
                families.append(family)
            }
        }
        guard pendingHelp == nil else { throw Failure(description: "trailing HELP without TYPE") }
        for family in families where family.type == "histogram" {
            try checkHistogram(family)
        }
        return families
    }

    private static func parseSample(_ line: Substring) -> Sample? {
        var rest = line[...]
        let name = String(rest.prefix { $0 != "{" && $0 != " " })
        guard isName(name, colon: true) else { return nil }
        rest = rest.dropFirst(name.count)
        var labels: [String: String] = [:]
        var order: [String] = []
        if rest.first == "{" {
            rest = rest.dropFirst()
            while rest.first != "}" {
                if !order.isEmpty {
                    guard rest.first == "," else { return nil }
                    rest = rest.dropFirst()
                }
                let label = String(rest.prefix { $0 != "=" })
                guard isName(label, colon: false), labels[label] == nil else { return nil }
                rest = rest.dropFirst(label.count)
                guard rest.hasPrefix("=\"") else { return nil }
                rest = rest.dropFirst(2)
                // Find the closing quote, skipping escaped characters.
                var end = rest.startIndex
                while end < rest.endIndex, rest[end] != "\"" {
                    if rest[end] == "\\" {
                        end = rest.index(after: end)
                        guard end < rest.endIndex else { return nil }
                    }
                    end = rest.index(after: end)
                }
                guard end < rest.endIndex, let value = unescape(rest[..<end], quotes: true) else { return nil }
                labels[label] = value
                order.append(label)
                rest = rest[rest.index(after: end)...]
            }
            rest = rest.dropFirst()
        }
        guard rest.first == " " else { return nil }
        guard let value = parseValue(rest.dropFirst()) else { return nil }
        return Sample(name: name, labels: labels, labelOrder: order, value: value)
    }

    static func parseValue(_ text: Substring) -> Double? {
        switch text {
        case "+Inf": return .infinity
        case "-Inf": return -.infinity
        case "NaN": return .nan
        default:
            // Only plain decimal/exponent forms; rejects "inf", "nan", hex floats, spaces.
            guard !text.isEmpty, text.allSatisfy({ "0123456789.eE+-".contains($0) }) else { return nil }
            return Double(text)
        }
    }

    private static func unescape(_ text: Substring, quotes: Bool) -> String? {
        var out = ""
        var iterator = text.makeIterator()
        while let character = iterator.next() {
            if quotes, character == "\"" { return nil }
            guard character == "\\" else { out.append(character); continue }
            switch iterator.next() {
            case "\\": out.append("\\")
            case "n": out.append("\n")
            case "\"" where quotes: out.append("\"")
            default: return nil
            }
        }
        return out
    }

    private static func isName(_ name: String, colon: Bool) -> Bool {
        guard let first = name.first, first.isASCII, first.isLetter || first == "_" || (colon && first == ":") else { return false }
        return name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || (colon && $0 == ":")) }
    }

    private static func checkHistogram(_ family: Family) throws {
        func fail(_ why: String) -> Failure { Failure(description: "histogram \(family.name): \(why)") }
        var groups: [[String: String]: (buckets: [(le: Double, count: Double)], sum: Double?, count: Double?)] = [:]
        for sample in family.samples {
            var key = sample.labels
            if sample.name.hasSuffix("_bucket") {
                guard sample.labelOrder.last == "le", let le = key.removeValue(forKey: "le"),
                      let bound = parseValue(le[...]) else { throw fail("bucket without le last") }
                groups[key, default: ([], nil, nil)].buckets.append((bound, sample.value))
            } else if sample.name.hasSuffix("_sum") {
                groups[key, default: ([], nil, nil)].sum = sample.value
            } else {
                groups[key, default: ([], nil, nil)].count = sample.value
            }
        }
        for (labels, group) in groups {
            guard let count = group.count, group.sum != nil else { throw fail("\(labels) lacks _sum or _count") }
            guard let last = group.buckets.last, last.le == .infinity else { throw fail("\(labels) must end with +Inf") }
            for (a, b) in zip(group.buckets, group.buckets.dropFirst()) {
                guard a.le < b.le else { throw fail("le not increasing") }
                guard a.count <= b.count else { throw fail("buckets not cumulative") }
            }
            guard last.count == count else { throw fail("+Inf bucket \(last.count) != _count \(count)") }
        }
    }
}

private extension Optional {
    func orThrow(_ error: @autoclosure () -> some Error) throws -> Wrapped {
        guard let self else { throw error() }
        return self
    }
}


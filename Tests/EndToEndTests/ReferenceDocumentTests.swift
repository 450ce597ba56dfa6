import Foundation
import Settlement
import XCTest
@testable import ReceiptWorkerCLI

/// Keeps `docs/reference.md` true: every command, command flag, setting, log event and metric
/// that exists in the code has its row in the reference, and every row names something that exists.
///
/// What the test reads in the reference: Markdown table rows whose first cell is one back-ticked
/// name, under the nearest heading among `Commands`, `Command flags`, `Settings`, `Log events` and
/// `Metrics` (any level; a heading's subheadings belong to it, until the next heading of its level or
/// above). Header and separator rows, and rows elsewhere, are ignored. The rows:
///
/// - Commands: | `command` or `command action` | ... |
/// - Command flags: | `command` | `--flag` | ... |
/// - Settings: | `ENV_NAME` | `--flag` | default (`value`, or —) | kind | secret (yes or no) |
///   read by (command names, comma-separated, or "every command") | meaning |
/// - Log events: | `event` | level(s) | fields | when |
/// - Metrics: | `name` | type | labels (`a`, `b`, or —) | process | meaning |
///
/// Where the code's side comes from:
///
/// - commands, actions and flags: `CommandLineApp.commands` (each `CommandSpec`'s name, `actions`, `flags`);
///   a command with actions has a bare row only when it runs without one (`positionals` from 0);
/// - settings: `Settings.all`, itself checked against the settings the commands read; a row's flag,
///   default, kind, secrecy and readers must agree with the code;
/// - log events: there is no central list, so every `Sources/**/*.swift` is scanned for logger calls
///   whose event is a literal — `.info("name"`, `.debug(`, `.notice(`, `.warning(`, `.error(`, and
///   `.log(LEVEL, "name"` — plus `AlertKind.allCases` (each alert is logged under its kind, at error);
///   the row's level cell must name every level the code writes the event at literally;
/// - metrics: `Sources/**/*.swift` scanned for registry calls `.counter(`, `.gauge(`, `.histogram(`,
///   `.gaugeFunction(` whose name is an `iap_` literal, with their `labelNames:`; the row's type and
///   labels must agree.
final class ReferenceDocumentTests: XCTestCase {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let referencePath = "docs/reference.md"

    func testCommandsAndActions() throws {
        let document = try ReferenceDocument.load()
        var inCode: Set<String> = []
        for command in CommandLineApp.commands {
            let spec = command.spec
            if spec.actions.isEmpty || spec.positionals.lowerBound == 0 { inCode.insert(spec.name) }
            for action in spec.actions { inCode.insert("\(spec.name) \(action)") }
        }
        let documented = Set(document.rows("Commands").map(\.name))
        report(compare(code: inCode, document: documented, section: "Commands"))
    }

    func testCommandFlags() throws {
        let document = try ReferenceDocument.load()
        let inCode = Set(CommandLineApp.commands.flatMap { command in command.spec.flags.map { "\(command.spec.name) --\($0.name)" } })
        let documented = Set(document.rows("Command flags").map { "\($0.name) \(ReferenceDocument.unquoted($0.cell(1)))" })
        report(compare(code: inCode, document: documented, section: "Command flags"))
    }

    func testSettings() throws {
        var problems: [String] = []
        var seen: Set<String> = []
        for setting in Settings.all where !seen.insert(setting.env).inserted {
            problems.append("Settings.all lists \(setting.env) twice")
        }
        let read = Set(CommandLineApp.commands.flatMap(\.spec.settings).map(\.env))
        for env in read.subtracting(seen).sorted() { problems.append("\(env) is read by a command but missing from Settings.all") }
        for env in seen.subtracting(read).sorted() { problems.append("\(env) is in Settings.all but no command reads it") }

        let document = try ReferenceDocument.load()
        let rows = Dictionary(document.rows("Settings").map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        problems += compare(code: seen, document: Set(rows.keys), section: "Settings") { env in
            Settings.all.first { $0.env == env }.map { "add: " + Self.expectedRow($0) } ?? ""
        }
        for setting in Settings.all {
            guard let row = rows[setting.env] else { continue }
            let expected = Self.expectedCells(setting)
            let found = [ReferenceDocument.unquoted(row.cell(1)), ReferenceDocument.unquoted(row.cell(2)), row.cell(3), row.cell(4), row.cell(5)]
            let names = ["flag", "default", "kind", "secret", "read by"]
            for (index, name) in names.enumerated() where found[index] != expected[index] {
                // "read by" compares as a set of command names.
                if name == "read by", Self.commandSet(found[index]) == Self.commandSet(expected[index]) { continue }
                problems.append("Settings: \(setting.env)'s \(name) is '\(found[index])' in \(Self.referencePath), '\(expected[index])' in the code; "
                                + "the row should read: " + Self.expectedRow(setting))
            }
        }
        report(problems)
    }

    func testLogEvents() throws {
        let inCode = try SourceScan.logEvents()
        XCTAssertGreaterThan(inCode.count, 20, "the source scan found almost no log events: has the logger's API changed?")
        let document = try ReferenceDocument.load()
        let rows = Dictionary(document.rows("Log events").map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        var problems = compare(code: Set(inCode.keys), document: Set(rows.keys), section: "Log events") { event in
            "written at \(inCode[event]?.levels.sorted().joined(separator: ", ") ?? "?") in \(inCode[event]?.files.sorted().joined(separator: ", ") ?? "?")"
        }
        for (event, found) in inCode.sorted(by: { $0.key < $1.key }) {
            guard let row = rows[event] else { continue }
            let words = Set(row.cell(1).lowercased().split(whereSeparator: { !$0.isLetter }).map(String.init))
            for level in found.levels.sorted() where !words.contains(level) {
                problems.append("Log events: \(event) is written at level \(level) (\(found.files.sorted().joined(separator: ", "))), "
                                + "but its level cell says '\(row.cell(1))'")
            }
        }
        report(problems)
    }

    func testMetrics() throws {
        let inCode = try SourceScan.metrics()
        XCTAssertGreaterThan(inCode.count, 10, "the source scan found almost no metrics: has the registry's API changed?")
        let document = try ReferenceDocument.load()
        let rows = Dictionary(document.rows("Metrics").map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        var problems = compare(code: Set(inCode.keys), document: Set(rows.keys), section: "Metrics") { name in
            inCode[name].map { "a \($0.type) with labels \($0.labels.isEmpty ? "—" : $0.labels.joined(separator: ", ")) in \($0.file)" } ?? ""
        }
        for (name, metric) in inCode.sorted(by: { $0.key < $1.key }) {
            guard let row = rows[name] else { continue }
            if row.cell(1) != metric.type {
                problems.append("Metrics: \(name) is a \(metric.type) in \(metric.file), the reference says '\(row.cell(1))'")
            }
            let labels = row.cell(2) == "—" ? [] : row.cell(2).split(separator: ",").map { ReferenceDocument.unquoted(String($0)) }
            if labels != metric.labels {
                problems.append("Metrics: \(name) has labels [\(metric.labels.joined(separator: ", "))] in \(metric.file), "
                                + "the reference says '\(row.cell(2))'")
            }
        }
        report(problems)
    }

    // MARK: - Expected settings rows

    static func expectedCells(_ setting: Setting) -> [String] {
        let all = CommandLineApp.commands.map(\.spec.name)
        let readers = CommandLineApp.commands.filter { $0.spec.settings.contains { $0.env == setting.env } }.map(\.spec.name)
        let others = all.filter { !readers.contains($0) }
        let readBy = others.isEmpty ? "every command"
            : others.count < readers.count ? "every command except " + others.joined(separator: ", ") : readers.joined(separator: ", ")
        return ["--\(setting.flag)", setting.defaultValue ?? "—", kind(setting.kind), setting.secret ? "yes" : "no", readBy]
    }

    static func expectedRow(_ setting: Setting) -> String {
        let cells = expectedCells(setting)
        let defaultCell = setting.defaultValue.map { "`\($0)`" } ?? "—"
        return "| `\(setting.env)` | `\(cells[0])` | \(defaultCell) | \(cells[2]) | \(cells[3]) | \(cells[4]) | \(setting.help) |"
    }

    /// The kind column's words.
    static func kind(_ kind: Setting.Kind) -> String {
        func grouped(_ value: Int) -> String {
            let digits = String(value)
            return String(digits.reversed().enumerated().flatMap { $0.offset > 0 && $0.offset % 3 == 0 ? [",", $0.element] : [$0.element] }.reversed())
        }
        func number(_ value: Double) -> String { value == value.rounded() ? grouped(Int(value)) : String(value) }
        switch kind {
        case .text: return "text"
        case .url: return "http(s) URL"
        case .wholeNumber(let range):
            return range.upperBound == Int.max ? "whole number ≥ \(grouped(range.lowerBound))"
                : "whole number \(grouped(range.lowerBound))–\(grouped(range.upperBound))"
        case .seconds(let range): return "decimal \(number(range.lowerBound))–\(number(range.upperBound))"
        case .boolean: return "true or false"
        case .secondsList: return "list of seconds"
        case .choice(let choices): return "one of " + choices.map { "`\($0)`" }.joined(separator: ", ")
        case .listenAddress(let allowOff): return allowOff ? "HOST:PORT or `off`" : "HOST:PORT"
        case .filePath: return "file path"
        case .fileList: return "list of file paths"
        }
    }

    /// "a, b", "every command" or "every command except a, b" as the set of command names.
    static func commandSet(_ cell: String) -> Set<String> {
        func names(_ text: Substring) -> Set<String> {
            Set(text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
        }
        let all = Set(CommandLineApp.commands.map(\.spec.name))
        if cell == "every command" { return all }
        if cell.hasPrefix("every command except ") { return all.subtracting(names(cell.dropFirst("every command except ".count))) }
        return names(Substring(cell))
    }

    // MARK: - Differences

    /// Both directions of a name set comparison, one line each; `hint` adds what the code knows.
    func compare(code: Set<String>, document: Set<String>, section: String,
                 hint: (String) -> String = { _ in "" }) -> [String] {
        let missing = code.subtracting(document).sorted().map { name -> String in
            let extra = hint(name)
            return "\(section): `\(name)` is in the code but not in \(Self.referencePath)" + (extra.isEmpty ? "" : " — \(extra)")
        }
        let stale = document.subtracting(code).sorted().map { "\(section): `\($0)` is in \(Self.referencePath) but not in the code" }
        return missing + stale
    }

    /// One failure per difference: long joined messages get cut short in test logs.
    func report(_ problems: [String], file: StaticString = #filePath, line: UInt = #line) {
        for problem in problems { XCTFail(problem, file: file, line: line) }
    }
}

/// docs/reference.md's table rows by section (see `ReferenceDocumentTests`).
struct ReferenceDocument {
    struct Row {
        let name: String
        let cells: [String]
        /// Cell `index` (0 is the name's), trimmed; "" when the row is shorter.
        func cell(_ index: Int) -> String { index < cells.count ? cells[index] : "" }
    }

    static let sections: Set<String> = ["Commands", "Command flags", "Settings", "Log events", "Metrics"]
    private var rowsBySection: [String: [Row]] = [:]

    static func load() throws -> ReferenceDocument {
        let url = ReferenceDocumentTests.root.appendingPathComponent(ReferenceDocumentTests.referencePath)
        guard let text = try? String(contentsOf: url, encoding: .utf8) else {
            throw MissingReference(path: url.path)
        }
        return ReferenceDocument(text)
    }

    struct MissingReference: Error, CustomStringConvertible {
        let path: String
        var description: String { "cannot read \(path)" }
    }

    init(_ text: String) {
        var section: (name: String, level: Int)?
        var inFence = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line.hasPrefix("```") { inFence.toggle(); continue }
            if inFence { continue }
            if line.hasPrefix("#") {
                let level = line.prefix { $0 == "#" }.count
                let title = line.dropFirst(level).trimmingCharacters(in: .whitespaces)
                if Self.sections.contains(title) {
                    section = (title, level)
                } else if let current = section, level <= current.level {
                    section = nil
                }
                continue
            }
            guard let current = section, line.hasPrefix("|") else { continue }
            let cells = Self.cells(line)
            guard let first = cells.first, first.count > 2, first.hasPrefix("`"), first.hasSuffix("`"),
                  !first.dropFirst().dropLast().contains("`") else { continue }
            rowsBySection[current.name, default: []].append(Row(name: String(first.dropFirst().dropLast()), cells: cells))
        }
    }

    func rows(_ section: String) -> [Row] { rowsBySection[section] ?? [] }

    /// A table line's cells, split on `|` outside code spans and not escaped as `\|`.
    static func cells(_ line: String) -> [String] {
        var cells: [String] = []
        var current = ""
        var inCode = false
        var previous: Character = " "
        for character in line.dropFirst() {
            if character == "`" { inCode.toggle() }
            if character == "|" && !inCode && previous != "\\" {
                cells.append(current.trimmingCharacters(in: .whitespaces))
                current = ""
            } else {
                current.append(character)
            }
            previous = character
        }
        return cells
    }

    /// "`--flag`" → "--flag"; other text unchanged (trimmed).
    static func unquoted(_ cell: String) -> String {
        let trimmed = cell.trimmingCharacters(in: .whitespaces)
        if trimmed.count > 2, trimmed.hasPrefix("`"), trimmed.hasSuffix("`") { return String(trimmed.dropFirst().dropLast()) }
        return trimmed
    }
}

/// What the sources say, found by reading them (see `ReferenceDocumentTests` for the patterns).
enum SourceScan {
    struct LogEvent {
        var levels: Set<String> = []
        var files: Set<String> = []
    }

    struct Metric {
        let type: String
        let labels: [String]
        let file: String
    }

    static let levels: Set<String> = ["debug", "info", "notice", "warning", "error"]

    /// Every `Sources/**/*.swift` as (path relative to the package, text).
    static func sources() throws -> [(path: String, text: String)] {
        let folder = ReferenceDocumentTests.root.appendingPathComponent("Sources")
        guard let walker = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil) else { return [] }
        var files: [(String, String)] = []
        for case let url as URL in walker where url.pathExtension == "swift" {
            let relative = "Sources/" + url.path.dropFirst(folder.path.count + 1)
            files.append((relative, try String(contentsOf: url, encoding: .utf8)))
        }
        return files.sorted { $0.0 < $1.0 }
    }

    static func logEvents() throws -> [String: LogEvent] {
        let fixed = try NSRegularExpression(pattern: #"\.(debug|info|notice|warning|error)\(\s*"([a-z][a-z0-9_]*)""#)
        let leveled = try NSRegularExpression(pattern: #"\.log\(\s*([^()\n]*?),\s*"([a-z][a-z0-9_]*)""#)
        var events: [String: LogEvent] = [:]
        for (path, text) in try sources() {
            let range = NSRange(text.startIndex..., in: text)
            for match in fixed.matches(in: text, range: range) {
                let event = substring(text, match.range(at: 2))
                events[event, default: LogEvent()].levels.insert(substring(text, match.range(at: 1)))
                events[event, default: LogEvent()].files.insert(path)
            }
            for match in leveled.matches(in: text, range: range) {
                let event = substring(text, match.range(at: 2))
                let expression = substring(text, match.range(at: 1)).trimmingCharacters(in: .whitespaces)
                // `.log(.warning, "x"` has one level; `.log(level, "x"` is decided at run time.
                if expression.hasPrefix("."), levels.contains(String(expression.dropFirst())) {
                    events[event, default: LogEvent()].levels.insert(String(expression.dropFirst()))
                } else {
                    _ = events[event, default: LogEvent()]
                }
                events[event, default: LogEvent()].files.insert(path)
            }
        }
        for kind in AlertKind.allCases {
            events[kind.rawValue, default: LogEvent()].levels.insert("error")
            events[kind.rawValue, default: LogEvent()].files.insert("Sources/Settlement/Alerts.swift")
        }
        return events
    }

    static func metrics() throws -> [String: Metric] {
        let call = try NSRegularExpression(pattern: #"\.(counter|gauge|histogram|gaugeFunction)\(\s*"(iap_[a-z0-9_]+)""#)
        let labelList = try NSRegularExpression(pattern: #"labelNames:\s*\[([^\]]*)\]"#)
        let quoted = try NSRegularExpression(pattern: #""([^"]*)""#)
        var metrics: [String: Metric] = [:]
        for (path, text) in try sources() {
            for match in call.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                let function = substring(text, match.range(at: 1))
                let name = substring(text, match.range(at: 2))
                let arguments = callArguments(text, from: Range(match.range(at: 1), in: text)!.upperBound)
                var labels: [String] = []
                if let list = labelList.firstMatch(in: arguments, range: NSRange(arguments.startIndex..., in: arguments)) {
                    let inner = substring(arguments, list.range(at: 1))
                    labels = quoted.matches(in: inner, range: NSRange(inner.startIndex..., in: inner)).map { substring(inner, $0.range(at: 1)) }
                }
                let type = function == "gaugeFunction" ? "gauge" : function
                metrics[name] = Metric(type: type, labels: labels, file: path)
            }
        }
        return metrics
    }

    /// The text between the `(` at `start` and its matching `)`, string literals skipped.
    static func callArguments(_ text: String, from start: String.Index) -> String {
        var depth = 0
        var inString = false
        var escaped = false
        var index = start
        while index < text.endIndex {
            let character = text[index]
            if inString {
                if escaped { escaped = false } else if character == "\\" { escaped = true } else if character == "\"" { inString = false }
            } else if character == "\"" {
                inString = true
            } else if character == "(" {
                depth += 1
            } else if character == ")" {
                depth -= 1
                if depth == 0 { return String(text[start...index]) }
            }
            index = text.index(after: index)
        }
        return String(text[start...])
    }

    private static func substring(_ text: String, _ range: NSRange) -> String {
        Range(range, in: text).map { String(text[$0]) } ?? ""
    }
}

import Foundation
import Postgres

/// Checks one raw value against its setting's kind, naming the setting (never the value
/// of a secret) when it is wrong. Returns the normalised value.
enum SettingValidator {
    static func check(_ raw: String, for setting: Setting, source: String) throws -> String {
        let value = raw.trimmingCharacters(in: .whitespaces)
        func fail(_ why: String) -> UsageError {
            let shown = setting.secret ? "" : " '\(raw)'"
            let origin = source == "--\(setting.flag)" ? source : "\(setting.env) (--\(setting.flag))"
            return UsageError("invalid \(origin)\(shown): \(why)")
        }
        switch setting.kind {
        case .text:
            guard !value.isEmpty else { throw fail("must not be empty") }
        case .filePath:
            guard !value.isEmpty else { throw fail("must be a path") }
        case .fileList:
            guard !value.split(separator: ",").isEmpty else { throw fail("must list one or more files") }
        case .url:
            guard let url = URL(string: value), let scheme = url.scheme, ["http", "https"].contains(scheme), url.host != nil else {
                throw fail("must be an http(s) URL")
            }
        case .wholeNumber(let range):
            guard let number = Int(value) else { throw fail("must be a whole number") }
            guard range.contains(number) else { throw fail("must be between \(range.lowerBound) and \(range.upperBound)") }
        case .seconds(let range):
            guard let number = parseSeconds(value) else { throw fail("must be decimal seconds, e.g. 0.2 or 30") }
            guard range.contains(number) else { throw fail("must be between \(format(range.lowerBound)) and \(format(range.upperBound)) seconds") }
            return String(number)
        case .boolean:
            switch value.lowercased() {
            case "true", "1", "yes", "on": return "true"
            case "false", "0", "no", "off": return "false"
            default: throw fail("must be true or false")
            }
        case .secondsList:
            let items = value.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            let parsed = items.map { parseSeconds($0) }
            guard !items.isEmpty, parsed.allSatisfy({ $0 != nil && $0! >= 0 }) else {
                throw fail("must be comma-separated decimal seconds, e.g. 1,5,10,100,600")
            }
            return parsed.map { String($0!) }.joined(separator: ",")
        case .choice(let choices):
            guard choices.contains(value.lowercased()) else { throw fail("must be one of \(choices.joined(separator: ", "))") }
            return value.lowercased()
        case .listenAddress(let allowOff):
            if allowOff && value.lowercased() == "off" { return "off" }
            guard ListenAddress.parse(value) != nil else { throw fail("must be HOST:PORT, e.g. 127.0.0.1:9464\(allowOff ? ", or off" : "")") }
        }
        if case .text = setting.kind, setting.env == Settings.databaseURL.env {
            if let problem = PostgresConnection.conninfoProblem(value) { throw fail(problem) }
        }
        return value
    }

    /// Decimal seconds; a unit suffix (ms, s, m, h) is tolerated.
    static func parseSeconds(_ text: String) -> Double? {
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600)]
        for (suffix, scale) in units where text.hasSuffix(suffix) {
            if let number = Double(text.dropLast(suffix.count)), number.isFinite { return number * scale }
        }
        guard let number = Double(text), number.isFinite else { return nil }
        return number
    }

    private static func format(_ number: Double) -> String {
        number == number.rounded() ? String(Int(number)) : String(number)
    }
}

/// HOST:PORT with an IPv6 host in brackets.
enum ListenAddress {
    static func parse(_ text: String) -> (host: String, port: Int)? {
        guard let colon = text.lastIndex(of: ":") else { return nil }
        var host = String(text[..<colon])
        guard let port = Int(text[text.index(after: colon)...]), (0...65_535).contains(port) else { return nil }
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host.isEmpty { host = "0.0.0.0" }
        return (host, port)
    }
}

import Foundation

/// Bad or missing configuration: one line on stderr naming the setting, exit code 2.
struct UsageError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A flag that belongs to one command only (no environment variable).
struct CommandFlag: Sendable {
    let name: String
    let takesValue: Bool
    let help: String
}

/// What a command accepts, and its help text.
struct CommandSpec: Sendable {
    let name: String
    let summary: String
    let usage: String
    var settings: [Setting] = []
    var flags: [CommandFlag] = []
    var positionals: ClosedRange<Int> = 0...0
    /// The words that may follow the command name (`alerts list`, `console add-user`); empty when
    /// the first argument, if any, is not an action (`inspect FILE`).
    var actions: [String] = []

    func helpText() -> String {
        var lines = ["usage: receipt-worker \(usage)", "", summary]
        if !flags.isEmpty {
            lines += ["", "options:"]
            for flag in flags {
                lines.append("  --\(flag.name)\(flag.takesValue ? " VALUE" : "")".padding(toLength: 34, withPad: " ", startingAt: 0) + flag.help)
            }
        }
        if !settings.isEmpty {
            lines += ["", "settings (flag, or environment variable; the flag wins):"]
            for setting in settings {
                let name = "  --\(setting.flag) / \(setting.env)"
                let fallback = setting.defaultValue.map { " (default \($0))" } ?? ""
                lines.append(name.padding(toLength: max(name.count + 2, 60), withPad: " ", startingAt: 0) + setting.help + fallback)
            }
        }
        return lines.joined(separator: "\n")
    }
}

/// Flags, environment and defaults resolved and checked for one command.
struct CommandLineOptions: Sendable {
    let positionals: [String]
    private let flagValues: [String: String]
    private let switches: Set<String>
    private let settingValues: [String: String]   // by env name, after flag > env > default

    /// Parses `--name value`, `--name=value` and bare boolean flags; checks every value.
    init(_ arguments: [String], spec: CommandSpec, environment: [String: String]) throws {
        var positionals: [String] = []
        var flagValues: [String: String] = [:]
        var switches: Set<String> = []
        var explicit: [String: String] = [:]
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            guard argument.hasPrefix("--"), argument.count > 2 else {
                positionals.append(argument)
                continue
            }
            var name = String(argument.dropFirst(2))
            var inlineValue: String?
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            func value() throws -> String {
                if let inlineValue { return inlineValue }
                guard index < arguments.count else { throw UsageError("--\(name) needs a value") }
                index += 1
                return arguments[index - 1]
            }
            if let setting = spec.settings.first(where: { $0.flag == name }) {
                if case .boolean = setting.kind, inlineValue == nil {
                    explicit[setting.env] = "true"
                } else {
                    explicit[setting.env] = try value()
                }
            } else if let flag = spec.flags.first(where: { $0.name == name }) {
                if flag.takesValue { flagValues[name] = try value() } else { switches.insert(name) }
            } else {
                throw UsageError("unknown flag --\(name) for '\(spec.name)' (see receipt-worker \(spec.name) --help)")
            }
        }
        guard spec.positionals.contains(positionals.count) else {
            if positionals.count > spec.positionals.upperBound, let extra = positionals.last {
                throw UsageError("unexpected argument '\(extra)' for '\(spec.name)' (usage: receipt-worker \(spec.usage))")
            }
            throw UsageError("missing argument for '\(spec.name)' (usage: receipt-worker \(spec.usage))")
        }
        var resolved: [String: String] = [:]
        for setting in spec.settings {
            let fromFlag = explicit[setting.env]
            let fromEnv = environment[setting.env].flatMap { $0.isEmpty ? nil : $0 }
            guard let raw = fromFlag ?? fromEnv ?? setting.defaultValue else { continue }
            let source = fromFlag != nil ? "--\(setting.flag)" : (fromEnv != nil ? setting.env : "default")
            resolved[setting.env] = try SettingValidator.check(raw, for: setting, source: source)
        }
        self.positionals = positionals
        self.flagValues = flagValues
        self.switches = switches
        self.settingValues = resolved
    }

    func has(_ flag: String) -> Bool { switches.contains(flag) }
    func flag(_ name: String) -> String? { flagValues[name] }

    func string(_ setting: Setting) -> String? { settingValues[setting.env] }

    func require(_ setting: Setting) throws -> String {
        guard let value = settingValues[setting.env] else {
            throw UsageError("\(setting.env) is not set (or pass --\(setting.flag))")
        }
        return value
    }

    // Values were checked at parse time, so these conversions cannot fail.
    func int(_ setting: Setting) -> Int { Int(settingValues[setting.env] ?? setting.defaultValue ?? "0") ?? 0 }
    func seconds(_ setting: Setting) -> Double { Double(settingValues[setting.env] ?? setting.defaultValue ?? "0") ?? 0 }
    func duration(_ setting: Setting) -> Duration { .milliseconds(Int64((seconds(setting) * 1000).rounded())) }
    func bool(_ setting: Setting) -> Bool { settingValues[setting.env] == "true" }
    func list(_ setting: Setting) -> [String] {
        (settingValues[setting.env] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// A secret from its own setting or from the `*_FILE` setting beside it (trailing newline trimmed).
    func secret(_ setting: Setting, file fileSetting: Setting) throws -> String? {
        if let value = string(setting) { return value }
        guard let path = string(fileSetting) else { return nil }
        guard let contents = FileManager.default.contents(atPath: path) else {
            throw UsageError("\(fileSetting.env): cannot read \(path)")
        }
        let text = String(decoding: contents, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { throw UsageError("\(fileSetting.env): \(path) is empty") }
        return text
    }
}

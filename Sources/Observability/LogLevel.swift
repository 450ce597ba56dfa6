import Foundation

/// Severity of a log event. Declaration order is severity order (`debug` < `error`).
public enum LogLevel: String, Sendable, Comparable, CaseIterable {
    case debug, info, notice, warning, error

    /// Parses `LOG_LEVEL`; case-insensitive, surrounding whitespace ignored. `nil` for anything else,
    /// so configuration can report a `config_error` instead of silently guessing.
    public init?(parsing text: String) {
        self.init(rawValue: text.trimmingCharacters(in: .whitespacesAndNewlines).lowercased())
    }

    // A switch instead of `allCases.firstIndex` because this runs on every log call.
    private var rank: Int {
        switch self {
        case .debug: 0
        case .info: 1
        case .notice: 2
        case .warning: 3
        case .error: 4
        }
    }

    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rank < rhs.rank }
}

/// Output encoding of a log line (`LOG_FORMAT`).
public enum LogFormat: String, Sendable, CaseIterable {
    case logfmt, json

    /// Parses `LOG_FORMAT`; case-insensitive, surrounding whitespace ignored.
    public init?(parsing text: String) {
        self.init(rawValue: text.trimmingCharacters(in: .whitespacesAndNewlines).lowercased())
    }
}

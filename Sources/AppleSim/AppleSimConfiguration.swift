import Foundation
import HTTP

/// Everything `receipt-worker apple-sim` can be told.
public struct AppleSimConfiguration: Sendable {
    public var host: String
    public var port: Int
    /// When set, a request whose `password` differs gets 21004.
    public var sharedSecret: String?
    /// Makes fault and latency rolls reproducible.
    public var seed: UInt64?
    public var faults: AppleSimFaults
    /// How long a "hung" request is held at most (far beyond any sane client timeout).
    public var hangLimit: Duration
    /// How long after a Pacific day ends its Sales and Trends report is served (before: 404 NOT_FOUND).
    public var salesReportDelay: TimeInterval = 0

    public init(host: String = "127.0.0.1", port: Int = 0, sharedSecret: String? = nil, seed: UInt64? = nil,
                faults: AppleSimFaults = AppleSimFaults(), hangLimit: Duration = .seconds(600)) {
        self.host = host
        self.port = port
        self.sharedSecret = sharedSecret
        self.seed = seed
        self.faults = faults
        self.hangLimit = hangLimit
    }

    /// Every flag `parse` knows, with its help line: the CLI lists exactly these.
    public static let flags: [(name: String, help: String)] = [
        ("listen", "HOST:PORT to serve on (default 127.0.0.1:0, any free port)"),
        ("shared-secret", "answer 21004 to requests whose password differs"),
        ("seed", "makes latency and fault rolls reproducible"),
        ("latency", "added delay: 200ms, or a range like 3s-6s"),
        ("error-rate", "share of requests answered HTTP 500/503"),
        ("status-21005-rate", "share answered status 21005"),
        ("retryable-rate", "share answered 21199 flagged retryable"),
        ("hang-rate", "share never answered"),
        ("reset-rate", "share whose connection is closed unanswered"),
        ("malformed-rate", "share answered with truncated JSON"),
        ("outage", "START:DURATION of answering 503 to everything, e.g. 5s:10s"),
        ("sales-report-delay", "how long after a Pacific day ends its sales report is available, e.g. 8h (default 0)"),
    ]

    public static let usage = """
        apple-sim [--listen HOST:PORT] [--shared-secret S] [--seed N] [--latency 200ms|3s-6s]
                  [--error-rate R] [--status-21005-rate R] [--retryable-rate R] [--hang-rate R]
                  [--reset-rate R] [--malformed-rate R] [--outage START:DURATION] [--sales-report-delay 8h]
        """

    /// Parses `--flag value` and `--flag=value` pairs; the first bad or unknown flag is the error.
    public static func parse(arguments: [String]) throws(AppleSimSettingError) -> AppleSimConfiguration {
        var config = AppleSimConfiguration()
        var i = 0
        while i < arguments.count {
            let argument = arguments[i]
            guard argument.hasPrefix("--") else {
                throw AppleSimSettingError(setting: "apple-sim", message: "unexpected argument '\(argument)'")
            }
            var name = String(argument.dropFirst(2))
            let value: String
            if let eq = name.firstIndex(of: "=") {
                value = String(name[name.index(after: eq)...])
                name = String(name[..<eq])
            } else {
                guard i + 1 < arguments.count else { throw AppleSimSettingError(setting: name, message: "needs a value") }
                i += 1
                value = arguments[i]
            }
            try config.apply(name, value)
            i += 1
        }
        try config.faults.validate()
        return config
    }

    mutating func apply(_ name: String, _ value: String) throws(AppleSimSettingError) {
        switch AppleSimFaults.canonicalName(name) {
        case "listen":
            do {
                (host, port) = try HTTPServerConfiguration.parseListenAddress(value)
            } catch {
                throw AppleSimSettingError(setting: "listen", message: "expected HOST:PORT like 127.0.0.1:8090, got '\(value)'")
            }
        case "shared-secret":
            sharedSecret = value.isEmpty ? nil : value
        case "seed":
            guard let n = UInt64(value.trimmingCharacters(in: .whitespaces)) else {
                throw AppleSimSettingError(setting: "seed", message: "expected a non-negative integer, got '\(value)'")
            }
            seed = n
        case "sales-report-delay":
            let hours = value.trimmingCharacters(in: .whitespaces).lowercased().hasSuffix("h")
            guard let delay = hours ? Double(value.trimmingCharacters(in: .whitespaces).dropLast()).map({ $0 * 3600 })
                    : SimDurations.parse(value).map({ Double(SimDurations.milliseconds($0)) / 1000 }),
                  delay.isFinite, delay >= 0 else {
                throw AppleSimSettingError(setting: "sales-report-delay", message: "expected a duration like 8h, 90s or 0, got '\(value)'")
            }
            salesReportDelay = delay
        default:
            try faults.apply(name, value)
        }
    }
}

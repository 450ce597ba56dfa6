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

    public init(host: String = "127.0.0.1", port: Int = 0, sharedSecret: String? = nil, seed: UInt64? = nil,
                faults: AppleSimFaults = AppleSimFaults(), hangLimit: Duration = .seconds(600)) {
        self.host = host
        self.port = port
        self.sharedSecret = sharedSecret
        self.seed = seed
        self.faults = faults
        self.hangLimit = hangLimit
    }

    public static let usage = """
        apple-sim [--listen HOST:PORT] [--shared-secret S] [--seed N] [--latency 200ms|3s-6s]
                  [--error-rate R] [--status-21005-rate R] [--retryable-rate R] [--hang-rate R]
                  [--reset-rate R] [--malformed-rate R] [--outage START:DURATION]
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
        default:
            try faults.apply(name, value)
        }
    }
}

import Foundation

/// Added delay per request: fixed ("200ms") or uniformly random in a range ("3s-6s").
public struct SimLatency: Sendable, Equatable, CustomStringConvertible {
    public var min: Duration
    public var max: Duration

    public init(min: Duration, max: Duration) {
        self.min = Swift.min(min, max)
        self.max = Swift.max(min, max)
    }

    public init(_ fixed: Duration) { self.init(min: fixed, max: fixed) }

    public static func parse(_ text: String) -> SimLatency? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 1 || parts.count == 2,
              let low = SimDurations.parse(String(parts[0])),
              let high = SimDurations.parse(String(parts.last!)) else { return nil }
        return SimLatency(min: low, max: high)
    }

    public var description: String {
        min == max ? SimDurations.format(min) : "\(SimDurations.format(min))-\(SimDurations.format(max))"
    }
}

/// A window of answering 503 to everything: `start` after the simulator starts (or after the
/// runtime change that set it), lasting `duration`. Spelled "5s:10s".
public struct SimOutage: Sendable, Equatable, CustomStringConvertible {
    public var start: Duration
    public var duration: Duration

    public init(start: Duration, duration: Duration) {
        self.start = start
        self.duration = duration
    }

    public static func parse(_ text: String) -> SimOutage? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let start = SimDurations.parse(String(parts[0])),
              let duration = SimDurations.parse(String(parts[1])) else { return nil }
        return SimOutage(start: start, duration: duration)
    }

    public var description: String { "\(SimDurations.format(start)):\(SimDurations.format(duration))" }
}

/// Fault injection settings, shared by the command line and `POST /sim/faults`.
/// Each request rolls once; the rates are stacked bands of that roll, so they must add up to ≤ 1.
public struct AppleSimFaults: Sendable, Equatable {
    public var latency: SimLatency?
    /// HTTP 500 or 503 (half each).
    public var errorRate: Double
    public var status21005Rate: Double
    /// Status 21199 flagged retryable (alternating `is_retryable` / `is-retryable` spellings).
    public var retryableRate: Double
    /// Never answer (until the hang limit or shutdown).
    public var hangRate: Double
    /// Close the connection without a final answer.
    public var resetRate: Double
    /// A truncated JSON body with HTTP 200.
    public var malformedRate: Double
    public var outage: SimOutage?

    public init(latency: SimLatency? = nil, errorRate: Double = 0, status21005Rate: Double = 0,
                retryableRate: Double = 0, hangRate: Double = 0, resetRate: Double = 0,
                malformedRate: Double = 0, outage: SimOutage? = nil) {
        self.latency = latency
        self.errorRate = errorRate
        self.status21005Rate = status21005Rate
        self.retryableRate = retryableRate
        self.hangRate = hangRate
        self.resetRate = resetRate
        self.malformedRate = malformedRate
        self.outage = outage
    }

    /// Setting names as flags spell them (without "--"); JSON keys may use "_" instead of "-".
    public static let settingNames = ["latency", "error-rate", "status-21005-rate", "retryable-rate",
                                      "hang-rate", "reset-rate", "malformed-rate", "outage"]

    /// "--error-rate", "error_rate" and "ERROR-RATE" all become "error-rate".
    static func canonicalName(_ name: String) -> String {
        var n = name.lowercased().replacingOccurrences(of: "_", with: "-")
        while n.hasPrefix("-") { n.removeFirst() }
        return n
    }

    /// Applies one setting given as text; "off"/"none"/"" clears latency or outage.
    public mutating func apply(_ name: String, _ value: String) throws(AppleSimSettingError) {
        let key = Self.canonicalName(name)
        let text = value.trimmingCharacters(in: .whitespaces)
        let clears = ["", "off", "none", "0"].contains(text.lowercased())
        switch key {
        case "latency":
            if clears { latency = nil; return }
            guard let parsed = SimLatency.parse(text) else {
                throw AppleSimSettingError(setting: key, message: "expected a duration like 200ms, 1.5s or a range 3s-6s, got '\(text)'")
            }
            latency = parsed
        case "outage":
            if clears { outage = nil; return }
            guard let parsed = SimOutage.parse(text) else {
                throw AppleSimSettingError(setting: key, message: "expected START:DURATION like 5s:10s, got '\(text)'")
            }
            outage = parsed
        case "error-rate": errorRate = try Self.rate(key, text)
        case "status-21005-rate": status21005Rate = try Self.rate(key, text)
        case "retryable-rate": retryableRate = try Self.rate(key, text)
        case "hang-rate": hangRate = try Self.rate(key, text)
        case "reset-rate": resetRate = try Self.rate(key, text)
        case "malformed-rate": malformedRate = try Self.rate(key, text)
        default: throw AppleSimSettingError(setting: key, message: "unknown setting")
        }
    }

    private static func rate(_ key: String, _ text: String) throws(AppleSimSettingError) -> Double {
        guard let r = Double(text), r.isFinite, (0...1).contains(r) else {
            throw AppleSimSettingError(setting: key, message: "expected a rate between 0 and 1, got '\(text)'")
        }
        return r
    }

    public func validate() throws(AppleSimSettingError) {
        let total = errorRate + status21005Rate + retryableRate + hangRate + resetRate + malformedRate
        if total > 1 + 1e-9 {
            throw AppleSimSettingError(setting: "faults", message: "fault rates add up to \(total), more than 1")
        }
    }

    /// The fault a roll in [0, 1) lands on; bands in a fixed order so a seed replays exactly.
    func fault(forRoll roll: Double) -> SimFault? {
        var edge = 0.0
        for (rate, fault) in [(hangRate, SimFault.hang), (resetRate, .reset), (errorRate, .httpError),
                              (malformedRate, .malformed), (status21005Rate, .status21005),
                              (retryableRate, .retryable)] {
            let lower = edge
            edge += rate
            // The position inside the band picks the variant (500 vs 503, key spelling).
            if roll < edge { return fault.variant(upper: (roll - lower) >= rate / 2) }
        }
        return nil
    }

    /// The JSON shape of `GET /sim/faults` (outage shown separately, as it is a live window).
    var settingsJSON: [String: Any] {
        [
            "latency": latency.map { $0.description } ?? "off",
            "error_rate": errorRate, "status_21005_rate": status21005Rate, "retryable_rate": retryableRate,
            "hang_rate": hangRate, "reset_rate": resetRate, "malformed_rate": malformedRate,
        ]
    }
}

/// What one request suffers.
enum SimFault: Equatable {
    case hang, reset, malformed, status21005
    case httpError(status: Int)
    case retryable(hyphenated: Bool)
    static let httpError = SimFault.httpError(status: 500)
    static let retryable = SimFault.retryable(hyphenated: false)

    func variant(upper: Bool) -> SimFault {
        switch self {
        case .httpError: .httpError(status: upper ? 503 : 500)
        case .retryable: .retryable(hyphenated: upper)
        default: self
        }
    }
}

/// A bad setting: names the setting (flag) and never echoes a secret.
public struct AppleSimSettingError: Error, Sendable, Equatable, CustomStringConvertible {
    public var setting: String
    public var message: String

    public init(setting: String, message: String) {
        self.setting = setting
        self.message = message
    }

    public var description: String { "--\(setting): \(message)" }
}

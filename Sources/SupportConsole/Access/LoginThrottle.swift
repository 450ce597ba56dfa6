import Foundation

/// Failed sign-ins per user name and per client address within a sliding window. Past the
/// limit, further attempts are refused without checking the password, so guessing costs the
/// attacker the window, not our CPU. Kept in memory: a restart forgives, which is acceptable
/// for a limit measured in minutes.
public actor LoginThrottle {
    public struct Limits: Sendable {
        public var perUser: Int
        public var perAddress: Int
        public var windowSeconds: Double

        public init(perUser: Int = 5, perAddress: Int = 20, windowSeconds: Double = 900) {
            self.perUser = perUser
            self.perAddress = perAddress
            self.windowSeconds = windowSeconds
        }
    }

    private let limits: Limits
    private var failures: [String: [Date]] = [:]

    init(limits: Limits = Limits()) { self.limits = limits }

    func allows(user: String, address: String, now: Date = Date()) -> Bool {
        recent("user:" + user, now).count < limits.perUser && recent("addr:" + address, now).count < limits.perAddress
    }

    func recordFailure(user: String, address: String, now: Date = Date()) {
        for key in ["user:" + user, "addr:" + address] { failures[key] = recent(key, now) + [now] }
        if failures.count > 100_000 { failures = failures.filter { !recent($0.key, now).isEmpty } }
    }

    func recordSuccess(user: String) { failures["user:" + user] = nil }

    private func recent(_ key: String, _ now: Date) -> [Date] {
        (failures[key] ?? []).filter { now.timeIntervalSince($0) < limits.windowSeconds }
    }
}

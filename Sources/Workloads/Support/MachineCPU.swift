import Foundation

/// The machine's CPU time so far, all cores together, from the first line of /proc/stat (in ticks).
struct MachineCPU: Sendable {
    let total: Double
    let idle: Double

    static func read() -> MachineCPU? {
        guard let stat = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
              let line = stat.split(separator: "\n").first, line.hasPrefix("cpu ") else { return nil }
        // user nice system idle iowait irq softirq steal (guest time is counted in user already)
        let ticks = line.split(separator: " ").dropFirst().prefix(8).compactMap { Double($0) }
        guard ticks.count == 8 else { return nil }
        return MachineCPU(total: ticks.reduce(0, +), idle: ticks[3] + ticks[4])
    }

    /// The busy share of the time since `earlier` (nil without both readings or any time passed).
    static func busy(since earlier: MachineCPU?) -> Double? {
        guard let earlier, let now = read(), now.total > earlier.total else { return nil }
        return 1 - (now.idle - earlier.idle) / (now.total - earlier.total)
    }
}

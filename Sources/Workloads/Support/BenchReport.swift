import Foundation
import Observability

/// Peak resident set size of this process (VmHWM), in MiB.
public enum ResourceUsage {
    public static func peakRSSMiB(pid: String = "self") -> Double {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
              let kib = Double(line.split(separator: " ").dropFirst().first ?? "") else { return 0 }
        return kib / 1024
    }

    /// User + system CPU seconds used by this process so far.
    public static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
            + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    }
}

/// One result line per measurement: `bench queue drain: drain_jobs_per_s=34353 processes=1 ...`.
public enum BenchReport {
    public static func line(_ bench: String, _ name: String, _ fields: KeyValuePairs<String, String>) {
        Console.print("bench \(bench) \(name): "
                      + fields.map { "\($0.key)=\($0.value.contains(" ") ? "\"\($0.value)\"" : $0.value)" }.joined(separator: " "))
    }

    /// Whole numbers from 100 up, two decimals below.
    public static func figure(_ value: Double) -> String { value >= 100 ? String(Int(value.rounded())) : String(format: "%.2f", value) }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

/// A workload that cannot go on (its message is the whole story, for one stderr line).
public struct WorkloadError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

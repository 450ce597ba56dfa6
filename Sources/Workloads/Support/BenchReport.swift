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

    /// User + system CPU seconds used so far by another process (0 when it is gone).
    public static func cpuSeconds(pid: pid_t) -> Double {
        ProcessStat.ticks(pid, including: [11, 12]) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// User + system CPU seconds used by this process so far.
    public static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
            + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    }
}

/// One result line per measurement: `bench queue drain: drain_jobs_per_s=N processes=1 ...`.
public enum BenchReport {
    public static func line(_ bench: String, _ name: String, _ fields: KeyValuePairs<String, String>) {
        line(bench, name, fields.map { ($0.key, $0.value) })
    }

    /// Fields known only at run time, in the order given.
    public static func line(_ bench: String, _ name: String, _ fields: [(String, String)]) {
        Console.print("bench \(bench) \(name): "
                      + fields.map { "\($0.0)=\($0.1.contains(" ") ? "\"\($0.1)\"" : $0.1)" }.joined(separator: " "))
    }

    /// Whole numbers from 100 up, two decimals below.
    /// The value below which `fraction` of `sorted` lies (nearest rank); 0 for none.
    static func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
        sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
    }

    /// The middle of the values (of three rounds, the one between the other two).
    static func median(_ values: [Double]) -> Double { percentile(values.sorted(), 0.5) }

    public static func figure(_ value: Double) -> String { value >= 100 ? String(Int(value.rounded())) : String(format: "%.2f", value) }
}


/// A workload that cannot go on (its message is the whole story, for one stderr line).
public struct WorkloadError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

import Foundation

/// Durations as the simulator's flags spell them: "200ms", "3s", "1.5s"; a bare number is seconds.
enum SimDurations {
    static func parse(_ text: String) -> Duration? {
        let t = text.trimmingCharacters(in: .whitespaces).lowercased()
        let (number, scale): (Substring, Double) =
            t.hasSuffix("ms") ? (t.dropLast(2), 0.001) : t.hasSuffix("s") ? (t.dropLast(), 1) : (Substring(t), 1)
        guard let value = Double(number), value.isFinite, value >= 0 else { return nil }
        return .milliseconds(Int64((value * scale * 1000).rounded()))
    }

    /// "200ms" below a second, else seconds with up to three decimals ("3s", "1.5s").
    static func format(_ d: Duration) -> String {
        let ms = milliseconds(d)
        if ms < 1000 { return "\(ms)ms" }
        let s = Double(ms) / 1000
        return s == s.rounded() ? "\(Int64(s))s" : "\(s)s"
    }

    static func milliseconds(_ d: Duration) -> Int64 {
        let c = d.components
        return c.seconds * 1000 + c.attoseconds / 1_000_000_000_000_000
    }
}

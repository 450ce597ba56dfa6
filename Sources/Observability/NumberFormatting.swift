/// Shared by log lines and Prometheus samples: integral values print as integers (`3`, not `3.0`),
/// others with Swift's shortest round-trip form; non-finite values use Prometheus spelling.
func formatNumber(_ value: Double) -> String {
    if value.isNaN { return "NaN" }
    if value.isInfinite { return value < 0 ? "-Inf" : "+Inf" }
    // Below 2^53 every integral Double is exactly an Int64, so the integer form loses nothing.
    if value == value.rounded(.towardZero), abs(value) < 9_007_199_254_740_992 {
        return String(Int64(value))
    }
    return value.description
}

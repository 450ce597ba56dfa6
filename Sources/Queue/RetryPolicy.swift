/// How long a job waits before its next attempt.
public enum RetryPolicy: Sendable, Equatable {
    /// Exponential backoff with full jitter: uniform in [0, min(cap, base * 2^(attempt-1))].
    case exponential(base: Double, cap: Double)
    /// Fixed delays by attempt (the seeds use 1,5,10,100,600); the last repeats.
    case schedule([Double])

    /// Delay in seconds after failed attempt number `attempt` (1-based).
    public func delay(afterAttempt attempt: Int, random: (ClosedRange<Double>) -> Double = { Double.random(in: $0) }) -> Double {
        switch self {
        case .exponential(let base, let cap):
            let exponent = Double(min(max(attempt - 1, 0), 62))
            let ceiling = min(cap, base * pow2(exponent))
            return ceiling <= 0 ? 0 : random(0...ceiling)
        case .schedule(let delays):
            guard !delays.isEmpty else { return 0 }
            return delays[min(max(attempt - 1, 0), delays.count - 1)]
        }
    }

    private func pow2(_ exponent: Double) -> Double {
        var value = 1.0
        for _ in 0..<Int(exponent) { value *= 2 }
        return value
    }
}

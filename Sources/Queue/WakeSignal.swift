/// Wakes the claim loop: a NOTIFY arrived, slots were freed, the poll timer fired, or
/// shutdown began. Wake-ups coalesce; the loop re-checks everything on each one.
struct WakeSignal: Sendable {
    let stream: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    init() {
        (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    func wake() { continuation.yield() }
    func finish() { continuation.finish() }
}

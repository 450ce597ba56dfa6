import Dispatch
import Foundation
import Synchronization

/// SIGINT/SIGTERM as an async sequence of counts: the first asks for a graceful stop,
/// a second one means "now".
// @unchecked: `sources` is never mutated after init, and DispatchSource.cancel is thread-safe.
final class SignalWatcher: @unchecked Sendable {
    private let sources: [DispatchSourceSignal]
    let signals: AsyncStream<Int32>

    init(_ numbers: [Int32] = [SIGINT, SIGTERM]) {
        let (stream, continuation) = AsyncStream.makeStream(of: Int32.self)
        signals = stream
        sources = numbers.map { number in
            // SIG_IGN keeps the default action (exit) away until the source is live. But once a
            // source exists, libdispatch's own handler is installed: a second watcher (the demo's
            // console inside EmbeddedDatabase's) must not replace it with SIG_IGN, or no watcher hears it.
            let previous = signal(number, SIG_IGN)
            if unsafeBitCast(previous, to: Int.self) > 1 { signal(number, previous) }
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { continuation.yield(number) }
            source.resume()
            return source
        }
    }

    func cancel() { sources.forEach { $0.cancel() } }
}

import CLibPQ
import Foundation
import Synchronization

/// Sends cancel requests for calls past their deadline, from one long-lived thread for the
/// whole process: a cancel opens a connection of its own, which may be slow too (the server
/// hung), and a storm of timeouts must not become a storm of threads. Requests wait in a
/// bounded queue; past its bound the oldest are dropped (their sessions are closed anyway:
/// a cancel only spares the server work it would stop on its own).
final class CancelRequests: Sendable {
    static let shared = CancelRequests()
    private static let queueLimit = 256

    private let queue = Mutex<[CancelToken]>([])
    private let signal = DispatchSemaphore(value: 0)

    private init() {
        let thread = Thread { [self] in loop() }
        thread.name = "pg-canceller"
        thread.stackSize = 256 << 10
        thread.start()
    }

    /// Takes the cancel key of `handle`'s backend and queues the request; nothing when the
    /// session has no backend yet (still connecting): there is nothing to cancel.
    func enqueue(for handle: OpaquePointer) {
        guard PQstatus(handle) == CONNECTION_OK, PQbackendPID(handle) != 0, let cancel = PQgetCancel(handle) else { return }
        let dropped = queue.withLock { pending -> [CancelToken] in
            pending.append(CancelToken(cancel))
            guard pending.count > Self.queueLimit else { return [] }
            let excess = Array(pending.prefix(pending.count - Self.queueLimit))
            pending.removeFirst(excess.count)
            return excess
        }
        dropped.forEach { PQfreeCancel($0.pointer) }
        signal.signal()
    }

    private func loop() {
        while true {
            signal.wait()
            let next = queue.withLock { $0.isEmpty ? nil : $0.removeFirst() }
            guard let next else { continue }
            var message = [CChar](repeating: 0, count: 256)
            _ = PQcancel(next.pointer, &message, Int32(message.count))
            PQfreeCancel(next.pointer)
        }
    }
}

/// A cancel key handed to the canceller thread, which alone uses it from then on.
private struct CancelToken: @unchecked Sendable {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
}

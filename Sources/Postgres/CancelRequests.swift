import CLibPQ
import Foundation
import Synchronization

/// Sends cancel requests for calls past their deadline. A cancel opens a connection of its
/// own and, with PostgreSQL 15's libpq, waits without any timeout for the server to close it:
/// to a hung host (accepting TCP, never answering) it never returns. So each request gets a
/// short-lived thread of its own, and at most `inFlightLimit` may be outstanding at once: one
/// hung host holds a few threads and delays no cancel meant for a healthy one (a new primary),
/// and a storm of timeouts cannot become a storm of threads. Past the limit a request is
/// dropped: its session is closed anyway; a cancel only spares the server work.
final class CancelRequests: Sendable {
    static let shared = CancelRequests()
    static let inFlightLimit = 16

    private let inFlight = Atomic<Int>(0)
    private let dropped = Atomic<Int>(0)

    private init() {}

    /// Cancel requests dropped because `inFlightLimit` were outstanding (tests, diagnostics).
    var droppedCount: Int { dropped.load(ordering: .relaxed) }

    /// Takes the cancel key of `handle`'s backend and sends the request on a thread of its
    /// own; nothing when the session has no backend yet (still connecting): there is nothing
    /// to cancel.
    func enqueue(for handle: OpaquePointer) {
        guard PQstatus(handle) == CONNECTION_OK, PQbackendPID(handle) != 0 else { return }
        guard reserveSlot() else {
            dropped.add(1, ordering: .relaxed)
            return
        }
        guard let cancel = PQgetCancel(handle) else {
            inFlight.subtract(1, ordering: .relaxed)
            return
        }
        let token = CancelToken(cancel)
        let thread = Thread { [self] in
            var message = [CChar](repeating: 0, count: 256)
            _ = PQcancel(token.pointer, &message, Int32(message.count))
            PQfreeCancel(token.pointer)
            inFlight.subtract(1, ordering: .relaxed)
        }
        thread.name = "pg-cancel"
        thread.stackSize = 128 << 10
        thread.start()
    }

    private func reserveSlot() -> Bool {
        var current = inFlight.load(ordering: .relaxed)
        while current < Self.inFlightLimit {
            let (exchanged, original) = inFlight.compareExchange(expected: current, desired: current + 1, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
        return false
    }
}

/// A cancel key handed to the thread that sends it, which alone uses it from then on.
private struct CancelToken: @unchecked Sendable {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
}

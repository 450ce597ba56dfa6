import CLibPQ
import Foundation
import Synchronization

public struct PostgresNotification: Sendable, Equatable {
    public let channel: String
    public let payload: String
}

/// LISTEN on a dedicated connection and thread. Notifications arrive on `events`;
/// after a reconnect a `.reconnected` event tells consumers that some may have been
/// missed (poll once).
public final class PostgresListener: Sendable {
    public enum Event: Sendable, Equatable {
        case notification(PostgresNotification)
        case reconnected
    }

    public let events: AsyncStream<Event>
    private let continuation: AsyncStream<Event>.Continuation
    private let stopped = Atomic<Bool>(false)
    private let finished = Mutex<CheckedContinuation<Void, Never>?>(nil)
    private let done = Atomic<Bool>(false)

    /// Starts listening; `channels` are plain identifiers (validated, since LISTEN cannot take parameters).
    public init(conninfo: String, channels: [String], pollInterval: Double = 0.25) throws {
        for channel in channels where !channel.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }) {
            throw PostgresError(kind: .client, message: "invalid channel name \(channel)")
        }
        (events, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(1024))
        let thread = Thread { [self] in
            self.loop(conninfo: conninfo, channels: channels, pollInterval: pollInterval)
        }
        thread.name = "pg-listener"
        thread.start()
    }

    /// Stops the listener thread and ends `events`.
    public func stop() async {
        stopped.store(true, ordering: .releasing)
        await withCheckedContinuation { continuation in
            let alreadyDone = finished.withLock { slot -> Bool in
                if done.load(ordering: .acquiring) { return true }
                slot = continuation
                return false
            }
            if alreadyDone { continuation.resume() }
        }
    }

    private func loop(conninfo: String, channels: [String], pollInterval: Double) {
        var connection: OpaquePointer?
        var backoff = 0.1
        var everConnected = false
        while !stopped.load(ordering: .acquiring) {
            if connection == nil || PQstatus(connection) != CONNECTION_OK {
                if let old = connection { PQfinish(old) }
                connection = Self.connectAndListen(conninfo, channels)
                if connection == nil {
                    Thread.sleep(forTimeInterval: backoff)
                    backoff = min(backoff * 2, 5)
                    continue
                }
                backoff = 0.1
                if everConnected { continuation.yield(.reconnected) }
                everConnected = true
            }
            var descriptor = pollfd(fd: PQsocket(connection), events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, Int32(pollInterval * 1000))
            if ready > 0 {
                if PQconsumeInput(connection) == 0 { continue } // broken; reconnect next round
                while let notify = PQnotifies(connection) {
                    let event = PostgresNotification(
                        channel: String(cString: notify.pointee.relname),
                        payload: String(cString: notify.pointee.extra))
                    PQfreemem(notify)
                    continuation.yield(.notification(event))
                }
            }
        }
        if let connection { PQfinish(connection) }
        continuation.finish()
        let waiter = finished.withLock { slot -> CheckedContinuation<Void, Never>? in
            done.store(true, ordering: .releasing)
            defer { slot = nil }
            return slot
        }
        waiter?.resume()
    }

    private static func connectAndListen(_ conninfo: String, _ channels: [String]) -> OpaquePointer? {
        guard let connection = PQconnectdb(conninfo) else { return nil }
        guard PQstatus(connection) == CONNECTION_OK else {
            PQfinish(connection)
            return nil
        }
        for channel in channels {
            let result = PQexec(connection, "LISTEN \"\(channel)\"")
            let ok = PQresultStatus(result) == PGRES_COMMAND_OK
            PQclear(result)
            if !ok {
                PQfinish(connection)
                return nil
            }
        }
        return connection
    }
}

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
        /// The session goes through a transaction pooler, where LISTEN hears nothing (the
        /// server connection is handed to other clients between transactions): the listener
        /// has stopped, and the consumer must poll (and logs `listen_behind_pooler`).
        case behindPooler
    }

    public let events: AsyncStream<Event>
    private let continuation: AsyncStream<Event>.Continuation
    private let stopped = Atomic<Bool>(false)
    private let finished = Mutex<CheckedContinuation<Void, Never>?>(nil)
    private let done = Atomic<Bool>(false)

    /// Starts listening; `channels` are plain identifiers (validated, since LISTEN cannot take parameters).
    public convenience init(conninfo: String, channels: [String], pollInterval: Double = 0.25) throws {
        try self.init(configuration: PostgresConfiguration(conninfo: conninfo, applicationName: "receipt-worker-listen"),
                      channels: channels, pollInterval: pollInterval)
    }

    /// A session that has been quiet for `healthCheckInterval` is asked `SELECT 1` within the
    /// call deadline: a LISTEN connection whose peer went silent is replaced, not waited on forever.
    public init(configuration: PostgresConfiguration, channels: [String], pollInterval: Double = 0.25,
                healthCheckInterval: Double = 5) throws {
        for channel in channels where !channel.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }) {
            throw PostgresError(kind: .client, message: "invalid channel name \(channel)")
        }
        (events, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(1024))
        let thread = Thread { [self] in
            // Its own host order: a reconnect after a failover skips the host that just hung.
            let session = LibpqSession(configuration: configuration, hostPreference: HostPreference(configuration: configuration))
            self.loop(session, channels: channels, pollInterval: pollInterval, healthCheckInterval: healthCheckInterval)
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

    private func loop(_ session: LibpqSession, channels: [String], pollInterval: Double, healthCheckInterval: Double) {
        var backoff = 0.1
        var everConnected = false
        var lastHeard = DispatchTime.now()
        let callTimeout = session.configuration.callTimeout
        while !stopped.load(ordering: .acquiring) {
            if !session.isOpen {
                do {
                    try session.open()
                    if session.behindPooler {
                        session.close()
                        continuation.yield(.behindPooler)
                        break
                    }
                    let listen = channels.map { "LISTEN \"\($0)\"" }.joined(separator: "; ") // validated identifiers
                    try session.simpleQuery(listen, deadline: Deadline(secondsFromNow: callTimeout))
                } catch {
                    session.abandon()
                    Thread.sleep(forTimeInterval: backoff)
                    backoff = min(backoff * 2, 5)
                    continue
                }
                backoff = 0.1
                lastHeard = .now()
                if everConnected { continuation.yield(.reconnected) }
                everConnected = true
            }
            var descriptor = pollfd(fd: session.socket, events: Int16(POLLIN), revents: 0)
            if poll(&descriptor, 1, Int32(pollInterval * 1000)) > 0 {
                do { try session.consumeAvailableInput() } catch {
                    session.close() // broken; reconnect next round
                    continue
                }
                lastHeard = .now()
            } else if Double(DispatchTime.now().uptimeNanoseconds - lastHeard.uptimeNanoseconds) / 1e9 >= healthCheckInterval {
                do {
                    try session.simpleQuery("SELECT 1", deadline: Deadline(secondsFromNow: callTimeout))
                    lastHeard = .now()
                } catch {
                    session.abandon()
                    continue
                }
            }
            drainNotifications(session)
        }
        session.close()
        continuation.finish()
        let waiter = finished.withLock { slot -> CheckedContinuation<Void, Never>? in
            done.store(true, ordering: .releasing)
            defer { slot = nil }
            return slot
        }
        waiter?.resume()
    }

    private func drainNotifications(_ session: LibpqSession) {
        guard let handle = session.handle else { return }
        while let notify = PQnotifies(handle) {
            let event = PostgresNotification(channel: String(cString: notify.pointee.relname),
                                             payload: String(cString: notify.pointee.extra))
            PQfreemem(notify)
            continuation.yield(.notification(event))
        }
    }
}

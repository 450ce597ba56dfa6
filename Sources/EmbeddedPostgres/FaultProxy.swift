import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A TCP relay on loopback for fault drills (tests and `bench chaos`): every accepted connection is forwarded to
/// the target, and a test can reset connections (RST), delay all forwarding, or freeze
/// the connections open at that moment — they stay open and silent, as when a host
/// crashes, a primary fails over or a NAT entry is dropped. New connections are unaffected.
/// In front of PostgreSQL it can also lose COMMIT replies: the connection is reset right
/// before the server's `CommandComplete "COMMIT"` would reach the client.
public final class FaultProxy: Sendable {
    public let port: Int
    private let target: (host: String, port: Int)
    private let listener: Int32
    private let state = Mutex(State())
    private let delayNanoseconds = Atomic<UInt64>(0)

    private struct State {
        var links: [Int: Link] = [:]
        var nextID = 0
        var accepted = 0
        var stopped = false
        /// A hung host: connections opened from now on are accepted and frozen too.
        var freezesNewConnections = false
        /// How many more COMMIT replies to cut, and how many were.
        var commitCutsLeft = 0
        var commitRepliesCut = 0
    }

    private struct Link {
        let client: Int32
        let upstream: Int32
        var frozen = false
        var closing = false
        var liveDirections = 2
    }

    public init(targetPort: Int, targetHost: String = "127.0.0.1") throws {
        target = (targetHost, targetPort)
        guard let (fd, port) = LoopbackSocket.bound(listenBacklog: 512) else { throw POSIXError(.EADDRINUSE) }
        listener = fd
        self.port = port
        let acceptor = Thread { [self] in acceptLoop() }
        acceptor.name = "fault-proxy-accept"
        acceptor.start()
    }

    /// `url` with its host and port replaced by the proxy's (a libpq URL).
    public func url(replacingIn url: String) -> String {
        guard var components = URLComponents(string: url) else { return url }
        components.host = "127.0.0.1"
        components.port = port
        return components.string ?? url
    }

    public var openConnections: Int { state.withLock { $0.links.values.filter { !$0.closing }.count } }

    /// Connections accepted since the proxy started, frozen ones included: how often clients tried this host.
    public var acceptedConnections: Int { state.withLock { $0.accepted } }

    /// The connections open now stop forwarding in both directions and stay open. Returns how many.
    @discardableResult
    public func freezeOpenConnections() -> Int {
        state.withLock { state in
            for id in state.links.keys { state.links[id]?.frozen = true }
            return state.links.values.filter { !$0.closing }.count
        }
    }

    /// The host hangs: open connections freeze, and new ones are accepted (the kernel's backlog
    /// does that for a stopped server too) and never answered.
    public func hang() {
        state.withLock { state in
            state.freezesNewConnections = true
            for id in state.links.keys { state.links[id]?.frozen = true }
        }
    }

    /// The hung host comes back: connections opened from now on are forwarded again (the frozen ones stay frozen).
    public func recover() {
        state.withLock { $0.freezesNewConnections = false }
    }

    /// Resets (RST) every open connection, or a random share of them.
    @discardableResult
    public func resetConnections(fraction: Double = 1) -> Int {
        // Under the lock: a link's descriptors are closed only after it left `links`, so they
        // cannot have been reused by a newer connection here.
        state.withLock { state -> Int in
            var picked = 0
            for (id, link) in state.links where !link.closing && Double.random(in: 0..<1) < fraction {
                state.links[id]?.closing = true
                picked += 1
                Self.abort(link)
            }
            return picked
        }
    }

    /// The next `count` COMMIT replies from the server, on any connection, are never delivered:
    /// each one's connection is reset right before it (the transaction has committed). 0 stops.
    public func cutCommitReplies(_ count: Int) {
        state.withLock { $0.commitCutsLeft = max(0, count) }
    }

    /// COMMIT replies cut so far.
    public var commitRepliesCut: Int { state.withLock { $0.commitRepliesCut } }

    /// Every chunk forwarded from now on waits this long first.
    public func setDelay(_ seconds: Double) { delayNanoseconds.store(UInt64(max(0, seconds) * 1e9), ordering: .relaxed) }

    /// Stops accepting and closes every connection.
    public func stop() {
        let already = state.withLock { state -> Bool in
            defer { state.stopped = true }
            return state.stopped
        }
        guard !already else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        resetConnections()
    }

    deinit { close(listener) }

    // MARK: - Relaying

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                return
            }
            LoopbackSocket.closeOnExec(client)
            state.withLock { $0.accepted += 1 }
            if state.withLock({ $0.stopped }) {
                close(client)
                return
            }
            guard let upstream = LoopbackSocket.connected(port: target.port, host: target.host) else {
                close(client)
                continue
            }
            let id = state.withLock { state -> Int in
                defer { state.nextID += 1 }
                state.links[state.nextID] = Link(client: client, upstream: upstream, frozen: state.freezesNewConnections)
                return state.nextID
            }
            for (from, to) in [(client, upstream), (upstream, client)] {
                let thread = Thread { [self] in relay(id: id, from: from, to: to, fromServer: from == upstream) }
                thread.stackSize = 256 << 10
                thread.start()
            }
        }
    }

    /// Forwards `from` to `to`. From the server, the stream is followed message by message: a
    /// header split across reads is held back until whole, so a COMMIT reply can be stopped.
    private func relay(id: Int, from: Int32, to: Int32, fromServer: Bool) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var held = 0
        var scanner = BackendMessageScanner()
        loop: while true {
            let count = buffer.withUnsafeMutableBytes { read(from, $0.baseAddress! + held, $0.count - held) }
            if count <= 0 { break }
            let available = held + count
            while let link = state.withLock({ $0.links[id] }), link.frozen, !link.closing { usleep(20_000) }
            if state.withLock({ $0.links[id]?.closing ?? true }) { break }
            let delay = delayNanoseconds.load(ordering: .relaxed)
            if delay > 0 { usleep(useconds_t(delay / 1000)) }
            var forward = available
            var cutHere = false
            if fromServer {
                (forward, cutHere) = scanner.scan(buffer, count: available) { claimCommitCut() }
            }
            var sent = 0
            while sent < forward {
                // MSG_NOSIGNAL: a peer already gone (a reset, a killed server) must end this relay,
                // not raise SIGPIPE and kill the whole process the proxy runs in.
                let written = buffer.withUnsafeBytes { send(to, $0.baseAddress! + sent, forward - sent, Int32(MSG_NOSIGNAL)) }
                if written <= 0 { break loop }
                sent += written
            }
            if cutHere {
                reset(id: id)
                break
            }
            held = available - forward
            if held > 0 { buffer.replaceSubrange(0..<held, with: buffer[forward..<available]) }
        }
        finish(id: id)
    }

    private func claimCommitCut() -> Bool {
        state.withLock { state in
            guard state.commitCutsLeft > 0 else { return false }
            state.commitCutsLeft -= 1
            state.commitRepliesCut += 1
            return true
        }
    }

    /// Resets (RST) one connection, as `resetConnections` does.
    private func reset(id: Int) {
        state.withLock { state in
            guard let link = state.links[id], !link.closing else { return }
            state.links[id]?.closing = true
            Self.abort(link)
        }
    }

    /// RST on close (linger 0); `shutdown` wakes the relay threads without sending FIN. Called
    /// under the lock, so the descriptors cannot have been closed and reused meanwhile.
    private static func abort(_ link: Link) {
        var linger = linger(l_onoff: 1, l_linger: 0)
        for fd in [link.client, link.upstream] {
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<linger>.size))
            shutdown(fd, Int32(SHUT_RD))
        }
    }

    /// The first direction to end shuts the other down; the last one closes both sockets. The
    /// shutdown happens under the lock, before the other direction can close the descriptors (a
    /// new connection could get the same numbers, and lose its reads to this shutdown).
    private func finish(id: Int) {
        let closing = state.withLock { state -> Link? in
            guard var link = state.links[id] else { return nil }
            link.liveDirections -= 1
            link.closing = true
            guard link.liveDirections == 0 else {
                state.links[id] = link
                shutdown(link.client, Int32(SHUT_RD))
                shutdown(link.upstream, Int32(SHUT_RD))
                return nil
            }
            state.links[id] = nil
            return link
        }
        if let closing {
            close(closing.client)
            close(closing.upstream)
        }
    }
}

import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Resolves a host name within a deadline. libpq resolves names with a blocking
/// `getaddrinfo` inside its connect, where no deadline reaches it; a DNS server that stopped
/// answering would hold a connection thread for as long as the resolver's own retries last.
/// A lookup runs on a thread of its own; past the deadline the caller stops waiting and the
/// lookup is left to finish alone. So that a DNS server that stopped answering cannot turn
/// every reconnect into another blocked thread, callers asking for a name already being looked
/// up wait for that lookup's answer, and at most `threadLimit` lookup threads run at once
/// (a name beyond them waits its turn, within its caller's deadline).
final class HostLookup: Sendable {
    /// The process's lookups.
    static let shared = HostLookup(threadLimit: 4, resolve: HostLookup.system)

    /// At most this many addresses of one name are tried (each with its own deadline).
    static let addressLimit = 4

    enum Answer: Sendable, Equatable {
        case success([String])
        case failure(String)
    }

    let threadLimit: Int
    private let resolve: @Sendable (String) -> Answer

    private struct State {
        /// The lookup of each name, from the first caller's request until its answer.
        var lookups: [String: Lookup] = [:]
        /// Lookups waiting for a thread, oldest first.
        var queued: [Lookup] = []
        var threads = 0
    }
    private let state = Mutex(State())

    /// `resolve` blocks until it has the answer (`system`: `getaddrinfo`).
    init(threadLimit: Int, resolve: @escaping @Sendable (String) -> Answer) {
        self.threadLimit = max(1, threadLimit)
        self.resolve = resolve
    }

    static func isNumeric(_ host: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }

    /// The numeric addresses of `name` (TCP), or an error naming the host.
    func addresses(of name: String, until deadline: Deadline) throws -> [String] {
        let (lookup, start) = state.withLock { state -> (Lookup, Bool) in
            if let running = state.lookups[name] {
                running.callers += 1
                return (running, false)
            }
            let lookup = Lookup(name: name)
            state.lookups[name] = lookup
            guard state.threads < threadLimit else {
                state.queued.append(lookup)
                return (lookup, false)
            }
            state.threads += 1
            return (lookup, true)
        }
        if start { startThread(with: lookup) }
        guard let answer = lookup.wait(until: deadline) else {
            state.withLock { _ in lookup.callers -= 1 }
            throw PostgresError(kind: .timedOut, message: "could not resolve host \"\(name)\" within the connect deadline")
        }
        switch answer {
        case .success(let addresses): return Array(addresses.prefix(Self.addressLimit))
        case .failure(let message): throw PostgresError(kind: .connectionFailed, message: "could not resolve host \"\(name)\": \(message)")
        }
    }

    /// How many callers wait for the lookup of `name` now (0 when none runs).
    func callersWaiting(for name: String) -> Int {
        state.withLock { $0.lookups[name]?.callers ?? 0 }
    }

    /// One thread resolves `first`, then each queued lookup that still has a caller, then ends.
    private func startThread(with first: Lookup) {
        let thread = Thread { [self] in
            var next: Lookup? = first
            while let lookup = next {
                let answer = resolve(lookup.name)
                var abandoned: [Lookup] = []
                next = state.withLock { state -> Lookup? in
                    state.lookups[lookup.name] = nil // the next caller asks afresh (addresses change at a failover)
                    while !state.queued.isEmpty {
                        let queued = state.queued.removeFirst()
                        if queued.callers > 0 { return queued }
                        state.lookups[queued.name] = nil // every caller gave up: not worth a lookup
                        abandoned.append(queued)
                    }
                    state.threads -= 1
                    return nil
                }
                lookup.finish(answer)
                for skipped in abandoned { skipped.finish(.failure("not looked up: no caller was waiting")) }
            }
        }
        thread.name = "pg-lookup"
        thread.stackSize = 256 << 10
        thread.start()
    }

    /// The system resolver (`getaddrinfo`, TCP), numeric addresses in its order, without repeats.
    static func system(_ name: String) -> Answer {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(name, nil, &hints, &list)
        guard status == 0 else { return .failure(String(cString: gai_strerror(status))) }
        defer { freeaddrinfo(list) }
        var found: [String] = []
        var entry = list
        while let current = entry {
            var text = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            if getnameinfo(current.pointee.ai_addr, current.pointee.ai_addrlen, &text, socklen_t(text.count), nil, 0, NI_NUMERICHOST) == 0 {
                let address = text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
                if !found.contains(address) { found.append(address) }
            }
            entry = current.pointee.ai_next
        }
        return found.isEmpty ? .failure("no address") : .success(found)
    }

    /// One name's lookup, and its answer handed from the lookup thread to every waiting caller.
    private final class Lookup: @unchecked Sendable {
        // Safety: `callers` is only read and written under the owning `HostLookup`'s state lock.
        let name: String
        var callers = 1
        private let answer = Mutex<Answer?>(nil)
        private let done = DispatchGroup()

        init(name: String) {
            self.name = name
            done.enter()
        }

        func finish(_ value: Answer) {
            answer.withLock { $0 = value }
            done.leave()
        }

        /// The answer, or nil when the deadline came first.
        func wait(until deadline: Deadline) -> Answer? {
            guard done.wait(timeout: DispatchTime(uptimeNanoseconds: deadline.uptimeNanoseconds)) == .success else { return nil }
            return answer.withLock { $0 }
        }
    }
}

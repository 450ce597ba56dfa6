import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Resolves a host name within a deadline. libpq resolves names with a blocking
/// `getaddrinfo` inside its connect, where no deadline reaches it; a DNS server that stopped
/// answering would hold a connection thread for as long as the resolver's own retries last.
/// The lookup runs on a short-lived thread of its own; past the deadline it is left to finish
/// alone and its answer is dropped.
enum HostLookup {
    /// At most this many addresses of one name are tried (each with its own deadline).
    static let addressLimit = 4

    static func isNumeric(_ host: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }

    /// The numeric addresses of `name` (TCP), or an error naming the host.
    static func addresses(of name: String, until deadline: Deadline) throws -> [String] {
        let outcome = Outcome()
        let thread = Thread { outcome.finish(resolve(name)) }
        thread.stackSize = 256 << 10
        thread.start()
        guard outcome.wait(until: deadline) else {
            throw PostgresError(kind: .timedOut, message: "could not resolve host \"\(name)\" within the connect deadline")
        }
        switch outcome.result {
        case .success(let addresses)?: return Array(addresses.prefix(addressLimit))
        case .failure(let message)?: throw PostgresError(kind: .connectionFailed, message: "could not resolve host \"\(name)\": \(message)")
        case nil: throw PostgresError(kind: .connectionFailed, message: "could not resolve host \"\(name)\"")
        }
    }

    private enum Answer: Sendable {
        case success([String])
        case failure(String)
    }

    private static func resolve(_ name: String) -> Answer {
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
                let address = String(cString: text)
                if !found.contains(address) { found.append(address) }
            }
            entry = current.pointee.ai_next
        }
        return found.isEmpty ? .failure("no address") : .success(found)
    }

    /// The lookup's answer, handed from its thread to the waiting one.
    private final class Outcome: Sendable {
        private let answer = Mutex<Answer?>(nil)
        private let semaphore = DispatchSemaphore(value: 0)

        var result: Answer? { answer.withLock { $0 } }

        func finish(_ value: Answer) {
            answer.withLock { $0 = value }
            semaphore.signal()
        }

        func wait(until deadline: Deadline) -> Bool {
            semaphore.wait(timeout: DispatchTime(uptimeNanoseconds: deadline.uptimeNanoseconds)) == .success
        }
    }
}

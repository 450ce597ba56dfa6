#if canImport(Glibc)
import Glibc
import Foundation
import Synchronization

/// One `send` call. Created off-loop, then touched only on the loop thread.
final class ClientExchange: @unchecked Sendable {
    let id: UInt64
    let key: String
    let address: SocketAddress
    /// The host name TLS checks the certificate against; nil for plain http.
    let tlsHost: String?
    let head: [UInt8]
    /// The caller's body, shared, not copied: a receipt is in memory once per request in flight.
    let body: [UInt8]
    let isHead: Bool
    let deadline: UInt64
    /// Set by a cancelled caller on its own thread; read by `start` on the loop. Inline, not a lock
    /// object: one is made per request.
    let cancelled = Atomic<Bool>(false)
    /// Set once by `perform`, before the exchange is posted to the loop.
    var continuation: CheckedContinuation<HTTPClientResponse, Error>?
    var connection: ClientConnection?
    var retried = false

    init(id: UInt64, key: String, address: SocketAddress, tlsHost: String?, head: [UInt8], body: [UInt8], isHead: Bool, deadline: UInt64) {
        self.id = id
        self.key = key
        self.address = address
        self.tlsHost = tlsHost
        self.head = head
        self.body = body
        self.isHead = isHead
        self.deadline = deadline
    }

    /// Resumes the caller exactly once.
    func finish(_ result: Result<HTTPClientResponse, HTTPClientError>) {
        continuation?.resume(with: result.mapError { $0 as Error })
        continuation = nil
    }
}
#endif

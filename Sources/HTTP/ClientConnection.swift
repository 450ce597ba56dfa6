#if canImport(Glibc)
import Glibc
import Foundation
import Synchronization

/// A client socket; loop-thread only.
final class ClientConnection {
    enum State { case connecting, handshaking, active, idle }

    let fd: Int32
    let key: String
    let tlsHost: String?
    var tls: TLSSession?
    /// Encrypted bytes not yet taken by the socket (https only).
    var cipherOut: [UInt8] = []
    var cipherOffset = 0
    var token: UInt64 = 0
    var state = State.connecting
    var closed = false
    var reused = false
    var interest: UInt32 = 0
    var out = OutgoingBytes()
    var parser = HTTPResponseParser(isHeadRequest: false, maxBodyBytes: 0)
    var exchange: ClientExchange?
    var idleSince: UInt64 = 0

    init(fd: Int32, key: String, tlsHost: String?) {
        self.fd = fd
        self.key = key
        self.tlsHost = tlsHost
    }

    /// Request bytes still to reach the socket, in plain or encrypted form.
    var hasUnsentBytes: Bool { out.hasUnsent || cipherOffset < cipherOut.count }
}

/// A request on its way out: our head and the caller's body kept apart, so the body is sent from
/// the caller's buffer rather than from a copy behind the head.
struct OutgoingBytes {
    private(set) var head: [UInt8] = []
    private(set) var body: [UInt8] = []
    private var sent = 0

    init() {}
    init(head: [UInt8], body: [UInt8]) {
        self.head = head
        self.body = body
    }

    var hasUnsent: Bool { sent < head.count + body.count }

    mutating func markSent(_ count: Int) { sent += count }

    /// What is left of the head and of the body (either may be empty).
    func withUnsent<T>(_ work: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) -> T) -> T {
        let headStart = min(sent, head.count), bodyStart = max(0, sent - head.count)
        return head.withUnsafeBytes { head in
            body.withUnsafeBytes { body in
                work(UnsafeRawBufferPointer(rebasing: head[headStart...]), UnsafeRawBufferPointer(rebasing: body[bodyStart...]))
            }
        }
    }
}
#endif

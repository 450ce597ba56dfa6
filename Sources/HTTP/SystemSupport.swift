#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// A value guarded by a lock: NSLock (a plain pthread mutex), not `Mutex`, whose Linux form is a
/// priority-inheritance futex. The event loop's inbox, taken by the loop and by every thread
/// handing it work, is this module's busiest lock; with `Mutex` there, `bench ingest --wrk` measured
/// a higher p99 (docs/benchmarks.md, 2026-11-28).
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

/// Monotonic nanoseconds: deadlines must not jump with the wall clock.
@inline(__always)
func monotonicNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

extension Duration {
    /// Whole nanoseconds, clamped at zero (a negative timeout means "already expired").
    var nanoseconds: UInt64 {
        let (s, atto) = components
        if s < 0 { return 0 }
        return UInt64(s) &* 1_000_000_000 &+ UInt64(max(0, atto) / 1_000_000_000)
    }

    /// Decimal seconds (negative durations count as zero).
    public var seconds: Double { Double(nanoseconds) / 1e9 }
}

func errnoDescription(_ code: Int32 = errno) -> String {
    String(cString: strerror(code))
}

/// Socket helpers shared by the server and the client.
enum Socket {
    static func setNoDelay(_ fd: Int32) {
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Creates a non-blocking, close-on-exec stream socket.
    static func makeStream(family: Int32) -> Int32 {
        #if canImport(Glibc)
        return socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #else
        let fd = socket(family, SOCK_STREAM, 0)
        if fd >= 0 { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return fd
        #endif
    }

    /// Sends without raising SIGPIPE on a peer that went away.
    static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
        #if canImport(Glibc)
        return Glibc.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
        #else
        return Darwin.send(fd, bytes.baseAddress, bytes.count, 0)
        #endif
    }

    /// Sends two buffers in one call (one segment on the wire when both fit), without raising SIGPIPE.
    static func send(_ fd: Int32, _ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer) -> Int {
        if second.isEmpty { return send(fd, first) }
        if first.isEmpty { return send(fd, second) }
        #if canImport(Glibc)
        var vectors = (iovec(iov_base: UnsafeMutableRawPointer(mutating: first.baseAddress), iov_len: first.count),
                       iovec(iov_base: UnsafeMutableRawPointer(mutating: second.baseAddress), iov_len: second.count))
        return withUnsafeMutablePointer(to: &vectors) { pair in
            pair.withMemoryRebound(to: iovec.self, capacity: 2) { vector in
                var message = msghdr()
                message.msg_iov = vector
                message.msg_iovlen = 2
                return sendmsg(fd, &message, Int32(MSG_NOSIGNAL))
            }
        }
        #else
        return send(fd, first)  // a short send: the caller sends the rest
        #endif
    }

    static func isWouldBlock(_ code: Int32) -> Bool { code == EAGAIN || code == EWOULDBLOCK }
}

/// An IPv4 or IPv6 socket address.
struct SocketAddress: @unchecked Sendable {
    var storage = sockaddr_storage()
    var length: socklen_t = 0

    var family: Int32 { Int32(storage.ss_family) }

    /// Parses a numeric host ("127.0.0.1", "::1", "[::1]") or "localhost"; nil for names needing DNS.
    init?(numericHost host: String, port: Int) {
        var h = host
        if h.hasPrefix("["), h.hasSuffix("]") { h = String(h.dropFirst().dropLast()) }
        if h.lowercased() == "localhost" { h = "127.0.0.1" }
        guard (0...65535).contains(port) else { return nil }
        var v4 = sockaddr_in()
        var v6 = sockaddr_in6()
        if inet_pton(AF_INET, h, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = in_port_t(UInt16(port).bigEndian)
            withUnsafeBytes(of: v4) { src in
                withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: src) }
            }
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
        } else if inet_pton(AF_INET6, h, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = in_port_t(UInt16(port).bigEndian)
            withUnsafeBytes(of: v6) { src in
                withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: src) }
            }
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        } else {
            return nil
        }
    }

    private init(copying ai: UnsafePointer<sockaddr>, length: socklen_t) {
        withUnsafeMutableBytes(of: &storage) { dst in
            dst.copyMemory(from: UnsafeRawBufferPointer(start: ai, count: Int(length)))
        }
        self.length = length
    }

    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        withUnsafeBytes(of: storage) { raw in
            body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), length)
        }
    }

    /// The port a bound socket actually got (port 0 asks the kernel for an ephemeral one).
    static func localPort(of fd: Int32) -> Int {
        var ss = sockaddr_storage()
        var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &ss) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        guard rc == 0 else { return 0 }
        return withUnsafeBytes(of: ss) { raw -> Int in
            if Int32(ss.ss_family) == AF_INET6 {
                return Int(UInt16(bigEndian: raw.load(as: sockaddr_in6.self).sin6_port))
            }
            return Int(UInt16(bigEndian: raw.load(as: sockaddr_in.self).sin_port))
        }
    }

    /// The numeric address of a connected socket's peer ("127.0.0.1", "::1"); IPv4-mapped IPv6
    /// addresses read as IPv4. nil when the peer is already gone.
    static func peerHost(of fd: Int32) -> String? {
        var ss = sockaddr_storage()
        var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &ss) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &len) }
        }
        guard rc == 0 else { return nil }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let written: UnsafePointer<CChar>? = withUnsafeBytes(of: ss) { raw in
            if Int32(ss.ss_family) == AF_INET6 {
                var address = raw.load(as: sockaddr_in6.self).sin6_addr
                return inet_ntop(AF_INET6, &address, &text, socklen_t(text.count))
            }
            var address = raw.load(as: sockaddr_in.self).sin_addr
            return inet_ntop(AF_INET, &address, &text, socklen_t(text.count))
        }
        guard written != nil else { return nil }
        let host = String(cString: text)
        return host.hasPrefix("::ffff:") && host.contains(".") ? String(host.dropFirst(7)) : host
    }

    /// Resolves a host name. Numeric hosts are parsed in place; names go through getaddrinfo on a
    /// throw-away thread, because getaddrinfo blocks and must never run on the cooperative pool.
    static func resolve(host: String, port: Int) async throws -> SocketAddress {
        if let address = SocketAddress(numericHost: host, port: port) { return address }
        return try await withCheckedThrowingContinuation { (cont: CheckedContinuation<SocketAddress, Error>) in
            let thread = Thread {
                var hints = addrinfo()
                hints.ai_family = AF_UNSPEC
                #if canImport(Glibc)
                hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
                #else
                hints.ai_socktype = SOCK_STREAM
                #endif
                var result: UnsafeMutablePointer<addrinfo>?
                let rc = getaddrinfo(host, String(port), &hints, &result)
                guard rc == 0, let first = result, let sa = first.pointee.ai_addr else {
                    cont.resume(throwing: HTTPClientError.connectionFailed("cannot resolve \(host): \(String(cString: gai_strerror(rc)))"))
                    return
                }
                let address = SocketAddress(copying: sa, length: first.pointee.ai_addrlen)
                freeaddrinfo(result)
                cont.resume(returning: address)
            }
            thread.name = "http-dns"
            thread.start()
        }
    }
}

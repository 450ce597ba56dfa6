import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// IPv4 TCP sockets on this machine, for the stand-ins this module starts: a free port for a
/// server, a listening socket for the fault proxy, a probe that a server is up.
enum LoopbackSocket {
    /// Close-on-exec: a server program we start later (pg_ctl, and the postmaster it leaves
    /// running) must not inherit the proxy's sockets. An inherited copy keeps a socket open after
    /// the proxy closes it, so the peer never sees the FIN: a standby whose primary restarted
    /// keeps waiting on a dead walsender and a synchronous primary stops committing.
    static let streamType = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)

    /// Marks a descriptor from `accept` close-on-exec (`accept4` is not in Swift's Glibc).
    static func closeOnExec(_ fd: Int32) {
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    }

    static func address(port: Int, host: String = "127.0.0.1") -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr(host)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        return address
    }

    /// A socket bound to a port the kernel chose (listening when `backlog` is given), and that port.
    static func bound(listenBacklog backlog: Int32? = nil) -> (fd: Int32, port: Int)? {
        let fd = socket(AF_INET, streamType, 0)
        guard fd >= 0 else { return nil }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = address(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw -> Bool in
                bind(fd, raw, length) == 0 && (backlog.map { listen(fd, $0) == 0 } ?? true) && getsockname(fd, raw, &length) == 0
            }
        }
        guard ok else {
            close(fd)
            return nil
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// A socket connected to `host:port`, or nil when nothing accepts there.
    static func connected(port: Int, host: String = "127.0.0.1") -> Int32? {
        let fd = socket(AF_INET, streamType, 0)
        guard fd >= 0 else { return nil }
        var address = address(port: port, host: host)
        let ok = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard ok else {
            close(fd)
            return nil
        }
        return fd
    }
}

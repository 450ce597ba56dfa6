#if canImport(Glibc)
import Glibc

/// epoll, eventfd and accept4 for Swift: the Glibc module map does not include <sys/epoll.h> or
/// <sys/eventfd.h> (nor the _GNU_SOURCE accept4), and this target may not add a C shim, so the libc symbols are resolved with
/// dlsym and called through `@convention(c)` pointers (the real C ABI, unlike `@_silgen_name`).
enum Epoll {
    // Linux UAPI values, identical on x86_64 and aarch64.
    static let inEvent: UInt32 = 0x001
    static let outEvent: UInt32 = 0x004
    static let errEvent: UInt32 = 0x008
    static let hupEvent: UInt32 = 0x010
    static let ctlAdd: Int32 = 1, ctlDel: Int32 = 2, ctlMod: Int32 = 3
    static let cloexec: Int32 = 0o2_000_000
    static let nonblock: Int32 = 0o4_000

    /// `struct epoll_event` is packed (12 bytes) on x86_64 and naturally aligned (16) elsewhere.
    #if arch(x86_64)
    static let eventSize = 12, dataOffset = 4
    #else
    static let eventSize = 16, dataOffset = 8
    #endif

    private static func symbol<T>(_ name: String, as type: T.Type) -> T {
        let handle = dlopen(nil, RTLD_NOW)
        guard let pointer = dlsym(handle, name) else { fatalError("libc lacks \(name)") }
        return unsafeBitCast(pointer, to: type)
    }

    private static let create1Fn = symbol("epoll_create1", as: (@convention(c) (Int32) -> Int32).self)
    private static let ctlFn = symbol("epoll_ctl", as: (@convention(c) (Int32, Int32, Int32, UnsafeMutableRawPointer?) -> Int32).self)
    private static let waitFn = symbol("epoll_wait", as: (@convention(c) (Int32, UnsafeMutableRawPointer?, Int32, Int32) -> Int32).self)
    private static let eventfdFn = symbol("eventfd", as: (@convention(c) (UInt32, Int32) -> Int32).self)

    private static let accept4Fn = symbol("accept4", as: (@convention(c) (Int32, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, Int32) -> Int32).self)

    /// Accepts a connection that is already non-blocking and close-on-exec.
    static func accept(_ listenFD: Int32) -> Int32 { accept4Fn(listenFD, nil, nil, nonblock | cloexec) }

    static func create() -> Int32 { create1Fn(cloexec) }

    static func eventFD() -> Int32 { eventfdFn(0, nonblock | cloexec) }

    static func control(_ epfd: Int32, _ op: Int32, _ fd: Int32, events: UInt32, token: UInt64) -> Int32 {
        var raw = (UInt64(0), UInt64(0))
        return withUnsafeMutableBytes(of: &raw) { buffer in
            buffer.storeBytes(of: events, toByteOffset: 0, as: UInt32.self)
            buffer.storeBytes(of: token, toByteOffset: dataOffset, as: UInt64.self)
            return ctlFn(epfd, op, fd, buffer.baseAddress)
        }
    }

    /// A reusable buffer for `epoll_wait` results.
    struct Events {
        let capacity: Int
        let buffer: UnsafeMutableRawBufferPointer

        init(capacity: Int) {
            self.capacity = capacity
            buffer = .allocate(byteCount: capacity * Epoll.eventSize, alignment: 8)
        }

        func deallocate() { buffer.deallocate() }

        func wait(_ epfd: Int32, timeoutMs: Int32) -> Int32 {
            Epoll.waitFn(epfd, buffer.baseAddress, Int32(capacity), timeoutMs)
        }

        func event(_ i: Int) -> (events: UInt32, token: UInt64) {
            let base = i * Epoll.eventSize
            return (buffer.loadUnaligned(fromByteOffset: base, as: UInt32.self),
                    buffer.loadUnaligned(fromByteOffset: base + Epoll.dataOffset, as: UInt64.self))
        }
    }
}
#endif

#if canImport(Glibc)
import CLinuxShim
import Glibc

/// epoll, eventfd and accept4, through the CLinuxShim C target (Swift's Glibc module lacks them).
enum Epoll {
    static let inEvent = clinux_epoll_in
    static let outEvent = clinux_epoll_out
    static let errEvent = clinux_epoll_err
    static let hupEvent = clinux_epoll_hup
    static let ctlAdd = clinux_epoll_ctl_add, ctlDel = clinux_epoll_ctl_del, ctlMod = clinux_epoll_ctl_mod

    /// Accepts a connection that is already non-blocking and close-on-exec.
    static func accept(_ listenFD: Int32) -> Int32 { clinux_accept_nonblocking(listenFD) }

    static func create() -> Int32 { clinux_epoll_create() }

    static func eventFD() -> Int32 { clinux_eventfd() }

    static func control(_ epfd: Int32, _ op: Int32, _ fd: Int32, events: UInt32, token: UInt64) -> Int32 {
        clinux_epoll_ctl(epfd, op, fd, events, token)
    }

    /// A reusable buffer for `epoll_wait` results.
    struct Events {
        let capacity: Int
        private let buffer: UnsafeMutableRawPointer

        init(capacity: Int) {
            self.capacity = capacity
            guard let buffer = clinux_epoll_events_alloc(Int32(capacity)) else { fatalError("out of memory for \(capacity) epoll events") }
            self.buffer = buffer
        }

        func deallocate() { clinux_epoll_events_free(buffer) }

        func wait(_ epfd: Int32, timeoutMs: Int32) -> Int32 {
            clinux_epoll_wait(epfd, buffer, Int32(capacity), timeoutMs)
        }

        func event(_ i: Int) -> (events: UInt32, token: UInt64) {
            (clinux_epoll_event_mask(buffer, Int32(i)), clinux_epoll_event_token(buffer, Int32(i)))
        }
    }
}
#endif

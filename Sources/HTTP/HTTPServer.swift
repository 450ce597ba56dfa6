#if canImport(Glibc)
import Glibc
import Foundation

/// A small HTTP/1.1 server: one epoll thread does all socket I/O; each complete request runs its
/// handler in a `Task`, whose response is posted back to the loop thread to be written.
public final class HTTPServer: Sendable {
    public typealias Configuration = HTTPServerConfiguration

    public let configuration: Configuration
    private let handler: HTTPHandler
    private let state = Locked<(core: ServerCore?, port: Int)>((nil, 0))

    public init(configuration: Configuration = Configuration(), handler: @escaping HTTPHandler) {
        self.configuration = configuration
        self.handler = handler
    }

    public convenience init(configuration: Configuration = Configuration(), router: HTTPRouter) {
        self.init(configuration: configuration, handler: router.handler)
    }

    /// The bound port (useful with port 0); 0 before `start()`.
    public var port: Int { state.withLock { $0.port } }

    /// Binds, listens and starts the loop thread. Bind errors are thrown here, synchronously.
    @discardableResult
    public func start() throws -> Int {
        try state.withLock { state in
            guard state.core == nil else { throw HTTPServerError.alreadyStarted }
            let fd = try Self.listen(configuration)
            let loop: EventLoop
            do { loop = try EventLoop(name: "http-server") } catch { close(fd); throw error }
            let core = ServerCore(config: configuration, handler: handler, listenFD: fd, loop: loop)
            loop.start()
            loop.execute { core.startListening() }
            state.core = core
            state.port = SocketAddress.localPort(of: fd)
            return state.port
        }
    }

    /// Stops accepting, closes idle keep-alive connections, waits for in-flight handlers up to
    /// `grace` (then closes their connections and cancels them), and joins the loop thread.
    public func shutdown(grace: Duration = .seconds(10)) async {
        guard let core = state.withLock({ $0.core }) else { return }
        core.loop.execute { core.beginShutdown(grace: grace) }
        await core.loop.waitUntilExited()
    }

    /// Service style: starts (if needed) and suspends until the server has shut down.
    /// Cancelling the calling task starts a graceful shutdown.
    public func run() async throws {
        if state.withLock({ $0.core == nil }) { try start() }
        guard let core = state.withLock({ $0.core }) else { return }
        await withTaskCancellationHandler {
            await core.loop.waitUntilExited()
        } onCancel: {
            core.loop.execute { core.beginShutdown(grace: .seconds(10)) }
        }
    }

    private static func listen(_ config: Configuration) throws -> Int32 {
        guard let address = SocketAddress(numericHost: config.host, port: config.port) else {
            throw HTTPServerError.invalidListenAddress("\(config.host):\(config.port)")
        }
        let fd = Socket.makeStream(family: address.family)
        guard fd >= 0 else { throw HTTPServerError.systemCallFailed("socket: \(errnoDescription())") }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let rc = address.withSockaddr { bind(fd, $0, $1) }
        guard rc == 0, Glibc.listen(fd, config.listenBacklog) == 0 else {
            let message = "\(config.host):\(config.port): \(errnoDescription())"
            close(fd)
            throw HTTPServerError.bindFailed(message)
        }
        return fd
    }
}
#endif

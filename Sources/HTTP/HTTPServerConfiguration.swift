/// Limits default to values that keep slow or hostile clients cheap.
public struct HTTPServerConfiguration: Sendable {
    public var host: String
    public var port: Int
    /// Request line plus headers; beyond it the server answers 431 and closes.
    public var maxHeaderBytes: Int
    /// Judged on Content-Length before any body byte is read; beyond it 413 and close.
    public var maxBodyBytes: Int
    /// From a request's first byte to the end of its head (slowloris guard); then 408 and close.
    public var headerTimeout: Duration
    /// From the end of the head to the end of the body; also bounds writing a response.
    public var bodyTimeout: Duration
    /// How long a keep-alive connection may sit between requests.
    public var idleKeepAliveTimeout: Duration
    /// Connections beyond this are accepted and closed at once.
    public var maxConnections: Int
    public var listenBacklog: Int32
    /// Called on the server's loop thread after every response, including the server's own
    /// 4xx answers (their route is ""). `route` is the router's pattern, else the path.
    /// Keep it cheap (bump counters): it runs on the I/O thread.
    public var onRequestCompleted: (@Sendable (_ method: String, _ route: String, _ status: Int, _ durationSeconds: Double) -> Void)?
    /// Answers a request on the loop thread when it can, before any task is made (nil: the handler
    /// gets it): no hop to the cooperative pool and back, no epoll change. Only for answers worked
    /// out in microseconds (apple-sim's): while it runs, no other connection of this server is
    /// served. A response's `route` labels its metrics.
    public var immediateHandler: (@Sendable (HTTPRequest) -> HTTPResponse?)?

    public init(host: String = "127.0.0.1", port: Int = 0,
                maxHeaderBytes: Int = 16 * 1024, maxBodyBytes: Int = 4 * 1024 * 1024,
                headerTimeout: Duration = .seconds(10), bodyTimeout: Duration = .seconds(30),
                idleKeepAliveTimeout: Duration = .seconds(60), maxConnections: Int = 10_000,
                listenBacklog: Int32 = 1024,
                onRequestCompleted: (@Sendable (String, String, Int, Double) -> Void)? = nil) {
        self.host = host
        self.port = port
        self.maxHeaderBytes = maxHeaderBytes
        self.maxBodyBytes = maxBodyBytes
        self.headerTimeout = headerTimeout
        self.bodyTimeout = bodyTimeout
        self.idleKeepAliveTimeout = idleKeepAliveTimeout
        self.maxConnections = maxConnections
        self.listenBacklog = listenBacklog
        self.onRequestCompleted = onRequestCompleted
    }

    /// Configuration listening on "127.0.0.1:8080", "[::1]:8080", ":8080" (all IPv4 interfaces)
    /// or "0.0.0.0:0".
    public init(listen: String) throws {
        let (host, port) = try Self.parseListenAddress(listen)
        self.init(host: host, port: port)
    }

    public static func parseListenAddress(_ text: String) throws -> (host: String, port: Int) {
        let s = text.trimmingWhitespace
        let host: Substring, portText: Substring
        if s.hasPrefix("[") {
            guard let close = s.firstIndex(of: "]"), s[s.index(after: close)...].hasPrefix(":") else {
                throw HTTPServerError.invalidListenAddress(text)
            }
            host = s[s.index(after: s.startIndex)..<close]
            portText = s[s.index(close, offsetBy: 2)...]
        } else {
            guard let colon = s.lastIndex(of: ":"), !s[..<colon].contains(":") else {
                throw HTTPServerError.invalidListenAddress(text)
            }
            host = s[..<colon]
            portText = s[s.index(after: colon)...]
        }
        guard !portText.isEmpty, portText.allSatisfy(\.isASCII), let port = Int(portText), (0...65535).contains(port) else {
            throw HTTPServerError.invalidListenAddress(text)
        }
        let h = host.isEmpty ? "0.0.0.0" : String(host)
        guard SocketAddress(numericHost: h, port: port) != nil else { throw HTTPServerError.invalidListenAddress(text) }
        return (h, port)
    }
}

public enum HTTPServerError: Error, Sendable, Equatable {
    case invalidListenAddress(String)
    case bindFailed(String)
    case systemCallFailed(String)
    case alreadyStarted
}

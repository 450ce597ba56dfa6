import HTTP

/// How a console process serves: where, how long sessions last, and whether an SSO proxy
/// vouches for users instead of the password form.
public struct ConsoleConfiguration: Sendable {
    public var host: String
    public var port: Int
    /// e.g. "X-Forwarded-Email": the console user named by this header, when the request comes
    /// from one of `trustedProxies`. nil: password sign-in.
    public var trustedHeader: String?
    public var trustedProxies: Set<String>
    public var sessionSeconds: Double
    public var throttle: LoginThrottle.Limits

    public init(listen: String, trustedHeader: String? = nil, trustedProxies: Set<String> = [], sessionSeconds: Double = 8 * 3600,
                throttle: LoginThrottle.Limits = .init()) throws {
        (host, port) = try HTTPServerConfiguration.parseListenAddress(listen)
        self.trustedHeader = trustedHeader
        self.trustedProxies = trustedProxies
        self.sessionSeconds = sessionSeconds
        self.throttle = throttle
    }

    /// Cookies are `Secure` unless the console listens on loopback only: in production it sits
    /// behind TLS (a proxy); on a laptop, http://127.0.0.1 must still work.
    public var secureCookies: Bool { !["127.0.0.1", "::1", "localhost"].contains(host) && !host.hasPrefix("127.") }
}

import HTTP

/// How a console process serves: where, how long sessions last, and whether an SSO proxy
/// vouches for users instead of the password form.
public struct ConsoleConfiguration: Sendable {
    public var host: String
    public var port: Int
    /// e.g. "X-Forwarded-Email": the console user named by this header, when the request comes
    /// from one of `trustedProxies`. nil: password sign-in.
    public var trustedHeader: String?
    /// Peers whose `X-Forwarded-For` names the client (and who may set `trustedHeader`).
    public var trustedProxies: TrustedProxies
    /// Absolute lifetime of a session.
    public var sessionSeconds: Double
    /// A session unused this long ends (ASVS 3.3: idle and absolute timeouts).
    public var idleSeconds: Double
    public var throttle: LoginThrottle.Limits
    /// Cookies are `Secure` unless this says otherwise: the console usually sits behind a TLS proxy
    /// on the same host, so listening on loopback says nothing about how the browser reached it.
    /// Only for plain-http development (`CONSOLE_INSECURE_COOKIES=true`).
    public var insecureCookies: Bool
    /// Host names (besides IP literals, `localhost` and the listen host) this console answers to,
    /// e.g. the proxy's public name: any other name is DNS rebinding.
    public var allowedHosts: Set<String>
    /// The cost of new password hashes; older, cheaper hashes are replaced at the next sign-in.
    public var passwordHasher: PasswordHasher
    /// Users whose password works for one sign-in only (the demo's printed password): the
    /// first sign-in clears it, so a password copied from a terminal log opens nothing later.
    public var oneTimePasswordUsers: Set<String> = []

    public init(listen: String, trustedHeader: String? = nil, trustedProxies: TrustedProxies = .none, sessionSeconds: Double = 8 * 3600,
                idleSeconds: Double = 30 * 60, throttle: LoginThrottle.Limits = .init(), insecureCookies: Bool = false,
                allowedHosts: Set<String> = [], passwordHasher: PasswordHasher = .standard) throws {
        (host, port) = try HTTPServerConfiguration.parseListenAddress(listen)
        self.trustedHeader = trustedHeader
        self.trustedProxies = trustedProxies
        self.sessionSeconds = sessionSeconds
        self.idleSeconds = idleSeconds
        self.throttle = throttle
        self.insecureCookies = insecureCookies
        self.allowedHosts = allowedHosts
        self.passwordHasher = passwordHasher
    }

    public var secureCookies: Bool { !insecureCookies }

    var cookies: CookiePolicy { CookiePolicy(secure: secureCookies) }
}

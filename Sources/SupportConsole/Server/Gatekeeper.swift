import COpenSSL
import Foundation
import HTTP
import Observability
import Settlement

/// Who is asking: a session cookie, or (SSO mode) a header set by a trusted proxy. Answers
/// either the user (and any cookie to set) or the response that refuses the request.
struct Gatekeeper: Sendable {
    let configuration: ConsoleConfiguration
    let sessions: SessionStore
    let users: ConsoleUsers
    let audit: AuditLog
    let logger: Logger

    enum Verdict: Sendable {
        case allowed(ConsoleUser, setCookies: [String])
        case refused(HTTPResponse)
    }

    var ssoMode: Bool { configuration.trustedHeader != nil }

    /// The sign-in form, remembering the page a GET was going to so sign-in lands there.
    static func signInPath(returningTo request: HTTPRequest) -> String {
        let target = request.path + (request.query.map { $0.isEmpty ? "" : "?" + $0 } ?? "")
        guard request.method == "GET", target != "/" else { return "/login" }
        return "/login" + FormFields.query(["next": target])
    }

    func check(_ request: HTTPRequest) async throws -> Verdict {
        let cookie = Cookies.parse(request.header("Cookie"))[configuration.cookies.session]
        let fromSession = try await cookie.asyncMap { try await sessions.user(for: $0) } ?? nil
        guard let header = configuration.trustedHeader else {
            guard let user = fromSession else { return .refused(Responses.redirect(Self.signInPath(returningTo: request))) }
            return .allowed(user, setCookies: [])
        }
        // SSO: the header counts only from a trusted proxy; anyone else could set it.
        guard let address = request.remoteAddress, configuration.trustedProxies.contains(address) else {
            logger.warning("console_untrusted_peer", ["address": .string(request.remoteAddress ?? "-")])
            return .refused(Responses.html(MessagePage.render(title: "Sign in through SSO",
                message: "This console is reached through the company sign-in proxy only.", user: nil), status: 403))
        }
        guard let name = request.header(header)?.trimmingCharacters(in: .whitespaces), !name.isEmpty else {
            return .refused(Responses.html(MessagePage.render(title: "Sign in through SSO",
                message: "The sign-in proxy did not say who you are (\(header) is missing).", user: nil), status: 401))
        }
        if let user = fromSession, user.name == name { return .allowed(user, setCookies: []) }
        guard try await users.role(of: name) != nil else {
            try await audit.record(actor: name, action: "login_failed", target: nil,
                                   details: ["method": "sso", "reason": "not a console user", "address": address])
            return .refused(Responses.html(MessagePage.render(title: "Not a console user",
                message: "\(name) is not a console user; ask an administrator to run console add-user.", user: nil), status: 403))
        }
        let token = try await sessions.create(for: name)
        try await audit.record(actor: name, action: "login", target: nil, details: ["method": "sso", "address": address])
        guard let user = try await sessions.user(for: token) else { throw ConsoleFailure("new session not found") }
        return .allowed(user, setCookies: [sessionCookie(token)])
    }

    func sessionCookie(_ token: String) -> String {
        configuration.cookies.make(configuration.cookies.session, token, maxAge: Int(configuration.sessionSeconds))
    }

    /// A form's CSRF token against the session's, in constant time.
    static func tokensMatch(_ given: String?, _ expected: String) -> Bool {
        guard let given, given.utf8.count == expected.utf8.count, !expected.isEmpty else { return false }
        return CRYPTO_memcmp(given, expected, expected.utf8.count) == 0
    }
}

struct ConsoleFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension Optional {
    func asyncMap<T>(_ transform: (Wrapped) async throws -> T) async rethrows -> T? {
        guard let self else { return nil }
        return try await transform(self)
    }
}

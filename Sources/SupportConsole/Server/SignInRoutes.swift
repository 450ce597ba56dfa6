import Foundation
import HTTP

extension ConsoleApp {
    func addSignIn(to router: inout HTTPRouter) {
        router.get("/login") { request, _ in
            if gatekeeper.ssoMode { return Responses.redirect("/") }
            let token = Hex.random(bytes: 32)
            let next = FormFields(request.query ?? "").flatMap { Self.landing($0.text("next")) }
            return Responses.html(LoginPage.render(csrf: token, message: nil, next: next), cookies: [loginCSRFCookie(token, maxAge: 3600)])
        }
        router.post("/login") { request, _ in
            do {
                return try await signIn(request)
            } catch {
                logger.error("console_failure", ["path": "/login", "error": .error(error)])
                return Responses.html(MessagePage.render(title: "Unavailable", message: "The database did not answer; try again.", user: nil),
                                      status: 503)
            }
        }
        router.post("/logout", signedInPost { request, _, user, _ in
            if let token = Cookies.parse(request.header("Cookie"))[configuration.cookies.session] { try await sessions.delete(token) }
            try await audit.record(actor: user.name, action: "logout", target: nil)
            return Responses.redirect(gatekeeper.ssoMode ? "/" : "/login",
                                      cookies: [configuration.cookies.make(configuration.cookies.session, "", maxAge: 0)])
        })
    }

    private func signIn(_ request: HTTPRequest) async throws -> HTTPResponse {
        guard !gatekeeper.ssoMode else { return Responses.redirect("/") }
        let address = ClientAddress.of(request, trustedProxies: configuration.trustedProxies)
        guard let form = FormFields(String(decoding: request.body, as: UTF8.self)) else {
            return retry(message: "Enter a user name and a password.", status: 400, next: nil)
        }
        let next = Self.landing(form.text("next"))
        let retry = { (message: String, status: Int) in self.retry(message: message, status: status, next: next) }
        guard let name = form.text("user"), name.count <= 200, let password = form["password"], !password.isEmpty else {
            return retry("Enter a user name and a password.", 400)
        }
        // Double-submit: the form's token must equal the cookie set with the form.
        guard let cookie = Cookies.parse(request.header("Cookie"))[configuration.cookies.loginCSRF], Gatekeeper.tokensMatch(form["csrf"], cookie) else {
            return retry("The sign-in form expired; please try again.", 403)
        }
        // Counted before the password is checked, so parallel guesses cannot all pass together.
        if let wait = try await throttle.reserve(user: name, address: address) {
            try await audit.record(actor: name, action: "login_failed", target: nil, details: ["reason": "rate limited", "address": address])
            let seconds = Int(wait.rounded(.up))
            var response = retry("Too many failed sign-ins; try again in \(seconds) second\(seconds == 1 ? "" : "s").", 429)
            response.headers.append(("Retry-After", String(seconds)))
            return response
        }
        let checked: ConsoleRole?
        do {
            checked = try await users.checkPassword(name: name, password: password, hashing: hashing)
        } catch let busy as PasswordHashingBusy {
            return retry("Too many sign-ins at once (\(busy)).", 503)
        }
        let spent = checked == nil || !configuration.oneTimePasswordUsers.contains(name) ? true
            : try await users.spendOneTimePassword(name: name)
        guard let role = checked, spent else {
            try await audit.record(actor: name, action: "login_failed", target: nil, details: ["reason": "wrong user or password", "address": address])
            return retry("Wrong user name or password.", 401)
        }
        try await throttle.succeeded(user: name, address: address)
        let token = try await sessions.create(for: name)
        try await audit.record(actor: name, action: "login", target: nil, details: ["method": "password", "role": role.rawValue, "address": address])
        // Back to the page the person was going to when the sign-in form interrupted them.
        return Responses.redirect(next ?? "/", cookies: [gatekeeper.sessionCookie(token), loginCSRFCookie("", maxAge: 0)])
    }

    /// The form again with a fresh token and the reason.
    private func retry(message: String, status: Int, next: String?) -> HTTPResponse {
        let token = Hex.random(bytes: 32)
        return Responses.html(LoginPage.render(csrf: token, message: message, next: next), status: status, cookies: [loginCSRFCookie(token, maxAge: 3600)])
    }

    /// A page of this console to land on after signing in; never the sign-in form itself.
    private static func landing(_ next: String?) -> String? {
        let path = ReturnPath.from(next, default: "/")
        return path == "/" || path.hasPrefix("/login") || path.hasPrefix("/logout") ? nil : path
    }

    private func loginCSRFCookie(_ token: String, maxAge: Int) -> String {
        configuration.cookies.make(configuration.cookies.loginCSRF, token, maxAge: maxAge)
    }
}

import Foundation
import HTTP

extension ConsoleApp {
    func addSignIn(to router: inout HTTPRouter) {
        router.get("/login") { _, _ in
            if gatekeeper.ssoMode { return Responses.redirect("/") }
            let token = Hex.random(bytes: 32)
            return Responses.html(LoginPage.render(csrf: token, message: nil), cookies: [loginCSRFCookie(token, maxAge: 3600)])
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
        guard let form = FormFields(String(decoding: request.body, as: UTF8.self)),
              let name = form.text("user"), name.count <= 200, let password = form["password"], !password.isEmpty else {
            return retry(message: "Enter a user name and a password.", status: 400)
        }
        // Double-submit: the form's token must equal the cookie set with the form.
        guard let cookie = Cookies.parse(request.header("Cookie"))[configuration.cookies.loginCSRF], Gatekeeper.tokensMatch(form["csrf"], cookie) else {
            return retry(message: "The sign-in form expired; please try again.", status: 403)
        }
        // Counted before the password is checked, so parallel guesses cannot all pass together.
        if let wait = try await throttle.reserve(user: name, address: address) {
            try await audit.record(actor: name, action: "login_failed", target: nil, details: ["reason": "rate limited", "address": address])
            let seconds = Int(wait.rounded(.up))
            var response = retry(message: "Too many failed sign-ins; try again in \(seconds) second\(seconds == 1 ? "" : "s").", status: 429)
            response.headers.append(("Retry-After", String(seconds)))
            return response
        }
        let checked: ConsoleRole?
        do {
            checked = try await users.checkPassword(name: name, password: password, hashing: hashing)
        } catch let busy as PasswordHashingBusy {
            return retry(message: "Too many sign-ins at once (\(busy)).", status: 503)
        }
        let spent = checked == nil || !configuration.oneTimePasswordUsers.contains(name) ? true
            : try await users.spendOneTimePassword(name: name)
        guard let role = checked, spent else {
            try await audit.record(actor: name, action: "login_failed", target: nil, details: ["reason": "wrong user or password", "address": address])
            return retry(message: "Wrong user name or password.", status: 401)
        }
        try await throttle.succeeded(user: name, address: address)
        let token = try await sessions.create(for: name)
        try await audit.record(actor: name, action: "login", target: nil, details: ["method": "password", "role": role.rawValue, "address": address])
        return Responses.redirect("/", cookies: [gatekeeper.sessionCookie(token), loginCSRFCookie("", maxAge: 0)])
    }

    /// The form again with a fresh token and the reason.
    private func retry(message: String, status: Int) -> HTTPResponse {
        let token = Hex.random(bytes: 32)
        return Responses.html(LoginPage.render(csrf: token, message: message), status: status, cookies: [loginCSRFCookie(token, maxAge: 3600)])
    }

    private func loginCSRFCookie(_ token: String, maxAge: Int) -> String {
        configuration.cookies.make(configuration.cookies.loginCSRF, token, maxAge: maxAge)
    }
}

import Foundation
import HTTP
import Postgres

/// Bad input from the browser: answered with a 4xx page, never a crash.
struct BadRequest: Error {
    let status: Int
    let message: String
    init(_ message: String, status: Int = 400) {
        self.status = status
        self.message = message
    }
}

typealias ConsoleHandler = @Sendable (_ request: HTTPRequest, _ params: [String: String], _ user: ConsoleUser, _ form: FormFields) async throws -> HTTPResponse

extension ConsoleApp {
    /// A page any signed-in user may read. `form` holds the query string.
    func readable(_ handler: @escaping ConsoleHandler) -> HTTPRouteHandler {
        guarded(requiresSupport: false, handler)
    }

    /// A POST that changes something: support role and a valid CSRF token. `form` holds the body.
    func action(_ handler: @escaping ConsoleHandler) -> HTTPRouteHandler {
        guarded(requiresSupport: true, handler)
    }

    /// A page only the support role may open (it leads to actions, e.g. the Apple order lookup).
    func supportPage(_ handler: @escaping ConsoleHandler) -> HTTPRouteHandler {
        guarded(requiresSupport: true, handler)
    }

    /// Signed in, but for a POST only the CSRF token is required (sign out).
    func signedInPost(_ handler: @escaping ConsoleHandler) -> HTTPRouteHandler {
        guarded(requiresSupport: false, handler)
    }

    private func guarded(requiresSupport: Bool, _ handler: @escaping ConsoleHandler) -> HTTPRouteHandler {
        { request, params in
            var user: ConsoleUser?
            do {
                let (signedIn, cookies) = try await allowedUser(request)
                guard let signedIn else { return cookies }
                user = signedIn
                let isPost = request.method == "POST"
                guard let form = FormFields(isPost ? String(decoding: request.body, as: UTF8.self) : request.query) else {
                    throw BadRequest("The form could not be read (bad encoding).")
                }
                if isPost {
                    guard Gatekeeper.tokensMatch(form["csrf"], signedIn.csrfToken) else {
                        logger.warning("console_csrf_refused", ["actor": .string(signedIn.name), "path": .string(request.path)])
                        throw BadRequest("This form has expired or did not come from this console (CSRF token missing or stale). "
                                         + "Reload the page and try again.", status: 403)
                    }
                }
                // Every method, not only POST: a route is support-only whatever verb reaches it.
                if requiresSupport && !signedIn.role.mayAct {
                    logger.warning("console_role_refused", ["actor": .string(signedIn.name), "path": .string(request.path)])
                    throw BadRequest("Your role (\(signedIn.role.rawValue)) may read but not act. Ask for the support role.", status: 403)
                }
                var response = try await handler(request, params, signedIn, form)
                response.headers += cookies.headers.filter { $0.name == "Set-Cookie" }
                return response
            } catch let bad as BadRequest {
                return Responses.html(MessagePage.render(title: MessagePage.title(status: bad.status), message: bad.message,
                                                         user: user, back: request.header("Referer")), status: bad.status)
            } catch let refusal as ActionRefusal {
                return Responses.html(MessagePage.render(title: "Not done", message: refusal.message, user: user), status: 409)
            } catch let database as PostgresError {
                logger.error("console_failure", ["path": .string(request.path), "error": .error(database)])
                return Responses.html(MessagePage.render(title: "Database unavailable",
                    message: "The database did not answer; nothing was changed. Try again in a moment.", user: user), status: 503)
            } catch {
                // Not the database: say so, or support escalates to the wrong team.
                logger.error("console_failure", ["path": .string(request.path), "error": .error(error)])
                return Responses.html(MessagePage.render(title: "Something failed",
                    message: "The console failed unexpectedly (logged as console_failure); nothing is known to have changed. "
                        + "Tell the on-call engineer the time and this page's address.", user: user), status: 500)
            }
        }
    }

    /// The signed-in user and a response carrying cookies to set; or nil and the refusal.
    private func allowedUser(_ request: HTTPRequest) async throws -> (ConsoleUser?, HTTPResponse) {
        switch try await gatekeeper.check(request) {
        case .refused(let response): return (nil, response)
        case .allowed(let user, let setCookies): return (user, HTTPResponse(status: 200, headers: setCookies.map { ("Set-Cookie", $0) }))
        }
    }
}

extension FormFields {
    /// A positive whole number, or nil when absent; a 400 when present and not one.
    func cursor(_ name: String) throws -> Int? {
        guard let text = text(name) else { return nil }
        guard let value = Int(text), value > 0 else { throw BadRequest("\(name) must be a positive whole number.") }
        return value
    }

    /// A required text field of bounded length.
    func required(_ name: String, label: String, maxLength: Int) throws -> String {
        guard let value = text(name) else { throw BadRequest("\(label) is required.") }
        guard value.count <= maxLength else { throw BadRequest("\(label) is longer than \(maxLength) characters.") }
        return value
    }
}

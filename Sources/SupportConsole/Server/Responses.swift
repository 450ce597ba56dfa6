import Foundation
import HTTP

/// Responses with the console's headers: every one carries the CSP and framing refusal.
enum Responses {
    /// Only this origin's script and stylesheet; no inline script or style; no framing; forms post here only.
    static let contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        + "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

    /// `hsts` when cookies are Secure: the console is reached over TLS, and browsers should never try plain http.
    static func secured(_ response: HTTPResponse, hsts: Bool) -> HTTPResponse {
        var response = response
        response.headers += [
            ("Content-Security-Policy", contentSecurityPolicy), ("X-Frame-Options", "DENY"),
            ("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "no-referrer"),
        ]
        if hsts { response.headers.append(("Strict-Transport-Security", "max-age=31536000")) }
        if response.header("Cache-Control") == nil { response.headers.append(("Cache-Control", "no-store")) }
        return response
    }

    static func html(_ page: HTML, status: Int = 200, cookies: [String] = []) -> HTTPResponse {
        var response = HTTPResponse.text(status: status, page.rendered, contentType: "text/html; charset=utf-8")
        response.headers += cookies.map { ("Set-Cookie", $0) }
        return response
    }

    /// 303 See Other: after a POST, the browser GETs the result (a reload does not repeat the action).
    static func redirect(_ location: String, cookies: [String] = []) -> HTTPResponse {
        HTTPResponse(status: 303, headers: [("Location", location)] + cookies.map { ("Set-Cookie", $0) })
    }

    static func asset(_ text: String, contentType: String) -> HTTPResponse {
        HTTPResponse(status: 200, headers: [("Content-Type", contentType), ("Cache-Control", "max-age=300")], body: Array(text.utf8))
    }
}

/// Cookie header parsing.
enum Cookies {
    static func parse(_ header: String?) -> [String: String] {
        var cookies: [String: String] = [:]
        for part in (header ?? "").split(separator: ";") {
            let pair = part.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { continue }
            let name = pair[0].trimmingCharacters(in: .whitespaces)
            if cookies[name] == nil { cookies[name] = pair[1].trimmingCharacters(in: .whitespaces) }
        }
        return cookies
    }
}

/// The console's cookie names and attributes. Secure cookies take the `__Host-` prefix: the
/// browser then accepts them only with `Secure`, `Path=/` and no `Domain`, so a sibling subdomain
/// cannot plant or shadow them.
package struct CookiePolicy: Sendable {
    let secure: Bool

    package init(secure: Bool) { self.secure = secure }

    package var session: String { prefix + "rw_console_session" }
    var loginCSRF: String { prefix + "rw_console_login_csrf" }
    private var prefix: String { secure ? "__Host-" : "" }

    /// HttpOnly, SameSite=Strict, Path=/ (the prefix demands it), Secure unless turned off; `maxAge` 0 deletes.
    func make(_ name: String, _ value: String, maxAge: Int) -> String {
        "\(name)=\(value); Path=/; Max-Age=\(maxAge); HttpOnly; SameSite=Strict" + (secure ? "; Secure" : "")
    }
}

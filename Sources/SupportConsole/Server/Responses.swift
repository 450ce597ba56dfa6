import Foundation
import HTTP

/// Responses with the console's headers: every one carries the CSP and framing refusal.
enum Responses {
    /// Only this origin's script and stylesheet; no inline script or style; no framing; forms post here only.
    static let contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        + "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

    static func secured(_ response: HTTPResponse) -> HTTPResponse {
        var response = response
        response.headers += [
            ("Content-Security-Policy", contentSecurityPolicy), ("X-Frame-Options", "DENY"),
            ("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "no-referrer"),
        ]
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

/// Cookie header parsing and Set-Cookie values.
enum Cookies {
    static let session = "rw_console_session"
    static let loginCSRF = "rw_console_login_csrf"

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

    /// HttpOnly, SameSite=Strict, Secure unless on loopback; `maxAge` 0 deletes.
    static func make(_ name: String, _ value: String, path: String = "/", maxAge: Int, secure: Bool) -> String {
        "\(name)=\(value); Path=\(path); Max-Age=\(maxAge); HttpOnly; SameSite=Strict" + (secure ? "; Secure" : "")
    }
}

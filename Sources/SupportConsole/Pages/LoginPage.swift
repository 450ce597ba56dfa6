import Foundation
/// The password form (not shown in SSO mode). Its CSRF token is a double-submit cookie, since
/// there is no session yet.
enum LoginPage {
    static func render(csrf: String, message: String?, next: String? = nil) -> HTML {
        let landing: HTML = next.map { "<input type=\"hidden\" name=\"next\" value=\"\($0)\">" } ?? ""
        return Layout.page(title: "Sign in", current: "", user: nil, """
            <form class="card login" method="post" action="/login">\(Components.notice(message, tone: "bad"))\
            <input type="hidden" name="csrf" value="\(csrf)">\(landing)\
            <label>User <input type="text" name="user" autocomplete="username" required autofocus></label>\
            <label>Password <input type="password" name="password" autocomplete="current-password" required></label>\
            <button type="submit">Sign in</button></form>
            """)
    }
}

/// A refusal or failure as a page: what went wrong, in words, never a stack trace.
enum MessagePage {
    /// `back` is the Referer: a link back to the page the request came from when it was this console's.
    static func render(title: String, message: String, user: ConsoleUser?, back: String? = nil) -> HTML {
        let previous = back.flatMap(URLComponents.init(string:)).map { url in
            ReturnPath.from(url.percentEncodedPath + (url.percentEncodedQuery.map { "?" + $0 } ?? ""), default: "/")
        }
        let links: HTML = previous.map { $0 == "/" ? "" : "<a href=\"\($0)\">Back to the page you came from</a> · " } ?? ""
        return Layout.page(title: title, current: "", user: user,
                           "<section class=\"card\">\(Components.notice(message, tone: "bad"))<p>\(links)<a href=\"/\">The overview</a></p></section>")
    }

    /// The heading for a refusal: a conflict is not a malformed request.
    static func title(status: Int) -> String {
        switch status {
        case 403: "Refused"
        case 404: "Not found"
        case 409: "Not done: it conflicts with the current state"
        case 503: "Unavailable"
        default: "Bad request"
        }
    }
}

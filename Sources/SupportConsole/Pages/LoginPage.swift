/// The password form (not shown in SSO mode). Its CSRF token is a double-submit cookie, since
/// there is no session yet.
enum LoginPage {
    static func render(csrf: String, message: String?) -> HTML {
        Layout.page(title: "Sign in", current: "", user: nil, """
            <form class="card login" method="post" action="/login">\(Components.notice(message, tone: "bad"))\
            <input type="hidden" name="csrf" value="\(csrf)">\
            <label>User <input type="text" name="user" autocomplete="username" required autofocus></label>\
            <label>Password <input type="password" name="password" autocomplete="current-password" required></label>\
            <button type="submit">Sign in</button></form>
            """)
    }
}

/// A refusal or failure as a page: what went wrong, in words, never a stack trace.
enum MessagePage {
    static func render(title: String, message: String, user: ConsoleUser?) -> HTML {
        Layout.page(title: title, current: "", user: user,
                    "<section class=\"card\">\(Components.notice(message, tone: "bad"))<p><a href=\"/\">Back to the overview</a></p></section>")
    }
}

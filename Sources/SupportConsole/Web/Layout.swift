/// The page shell: head, navigation, who is signed in (with the sign-out form), the content.
enum Layout {
    static let sections: [(path: String, title: String)] = [
        ("/", "Overview"), ("/jobs", "Jobs"), ("/alerts", "Alerts"), ("/lookup", "Apple order lookup"), ("/audit", "Audit log"),
        ("/reconciliation", "Reconciliation"),
    ]

    static func page(title: String, current: String, user: ConsoleUser?, refreshSeconds: Int = 0, _ content: HTML) -> HTML {
        // The lookup is an action (it asks Apple): only the support role is shown the way there.
        let visible = sections.filter { $0.path != "/lookup" || user?.role.mayAct == true }
        let navigation = HTML.join(visible.map { section -> HTML in
            let marker = HTML(trusted: section.path == current ? " aria-current=\"page\"" : "")
            return "<a href=\"\(section.path)\"\(marker)>\(section.title)</a>"
        })
        let header: HTML = user.map { user in
            """
            <header class="top"><a class="brand" href="/">receipt-worker support</a><nav>\(navigation)</nav>\
            <form class="find" method="get" action="/find" role="search"><input type="search" name="q" required \
            placeholder="user, order, transaction, job #" aria-label="Find a user id, order id, Apple transaction or order id, or job id">\
            <button type="submit">Find</button></form>\
            <div class="who"><span>\(user.name) · \(user.role.rawValue)</span>\
            <form method="post" action="/logout">\(Components.csrfField(user))<button type="submit">Sign out</button></form></div></header>
            """
        } ?? "<header class=\"top\"><span class=\"brand\">receipt-worker support</span></header>"
        let refresh = HTML(trusted: refreshSeconds > 0 ? " data-refresh=\"\(refreshSeconds)\"" : "")
        return """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">\
            <title>\(title) · receipt-worker support</title><link rel="stylesheet" href="/static/console.css">\
            <script src="/static/console.js" defer></script></head>
            <body\(refresh)><a class="skip" href="#main">Skip to content</a>\(header)<main id="main" tabindex="-1"><h1>\(title)</h1>\(content)</main></body></html>
            """
    }
}

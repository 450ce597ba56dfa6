/// The header's "find" box when the text names several things, or nothing (one match redirects).
struct FindPage {
    let text: String
    let matches: [FindMatch]

    func render(_ user: ConsoleUser) -> HTML {
        guard !matches.isEmpty else { return Layout.page(title: "Nothing found", current: "", user: user, empty(user)) }
        let rows = matches.map { match -> [HTML] in
            ["\(match.kind.rawValue)", "<a href=\"\(match.href)\">\(match.key)</a>", Components.userLink(match.userID)]
        }
        let content: HTML = """
            <p>“\(text)” names more than one thing; choose one.</p>\
            \(Components.table(["what", "match", "user"], rows))
            """
        return Layout.page(title: "Found \(matches.count)", current: "", user: user, content)
    }

    /// Nothing in the jobs, ledger, orders or alerts: the buyer may still exist with nothing recorded
    /// yet, and an Apple order id (from the buyer's receipt e-mail) is answered only by Apple.
    private func empty(_ user: ConsoleUser) -> HTML {
        let lookup: HTML = user.role.mayAct
            ? "<li><a href=\"/lookup\(FormFields.query(["apple_order_id": text]))\">Look “\(text)” up with Apple as an order id</a> (the id on the buyer's receipt e-mail).</li>"
            : ""
        return """
            <p>No job, ledger row, order or alert names “\(text)”.</p>\
            <ul class="next-steps"><li><a href="\(ConsoleFind.userHref(text))">Open the user page for “\(text)”</a> \
            (empty when nothing was recorded for this user).</li>\(lookup)</ul>
            """
    }
}

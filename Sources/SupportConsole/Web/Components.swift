/// Small pieces the pages share: tables, links to jobs and users, state badges, forms.
enum Components {
    static func table(_ headers: [String], _ rows: [[HTML]], empty: String = "Nothing here.") -> HTML {
        guard !rows.isEmpty else { return "<p class=\"empty\">\(empty)</p>" }
        let head = HTML.join(headers.map { header -> HTML in "<th scope=\"col\">\(header)</th>" })
        // data-label lets a phone show each row as a card, the header beside each value.
        let body = HTML.join(rows.map { cells -> HTML in
            "<tr>\(zip(headers, cells).map { header, cell -> HTML in "<td data-label=\"\(header)\">\(cell)</td>" })</tr>"
        })
        return "<div class=\"scroll\"><table><thead><tr>\(head)</tr></thead><tbody>\(body)</tbody></table></div>"
    }

    static func jobLink(_ id: Int?) -> HTML {
        guard let id else { return "–" }
        return "<a href=\"/jobs/\(id)\">#\(id)</a>"
    }

    static func userLink(_ userID: String?) -> HTML {
        guard let userID else { return "–" }
        return "<a href=\"/users\(FormFields.query(["id": userID]))\">\(userID)</a>"
    }

    /// A search link for an order or transaction id (finds its jobs).
    static func searchLink(_ text: String?) -> HTML {
        guard let text else { return "–" }
        return "<a href=\"/jobs\(FormFields.query(["q": text]))\">\(text)</a>"
    }

    /// A job's state and outcome; a paid_not_credited job whose payment is in the ledger now, or
    /// whose alert support closed as owed nothing, reads as settled (with what it was in the
    /// tooltip), not as red attention.
    static func jobStatus(_ job: JobSummary) -> (state: HTML, outcome: HTML) {
        guard job.settledSince else { return (badge(job.state), badge(job.outcome)) }
        let since = job.creditedSince ? "every transaction of this job is in the ledger now."
            : "support closed its alert: the buyer is owed nothing (see the alert's note)."
        let was = "Was \(job.state) / \(job.outcome ?? "–"); \(since)"
        return ("<span class=\"badge ok\" title=\"\(was)\">resolved</span>",
                "<span class=\"badge ok\" title=\"\(was)\">\(settledWord(job))</span>")
    }

    /// "credited since" or "owed nothing", as the legend explains them.
    static func settledWord(_ job: JobSummary) -> String {
        job.creditedSince ? "credited since" : "owed nothing"
    }

    /// "What these words mean" for the words a page shows, each with what to do: a disclosure
    /// so the meaning is one tap away on a phone, where tooltips do not exist.
    static func legend(_ words: [String?], open: Bool = false, meaning: (String) -> String? = Explanations.word) -> HTML {
        var seen: Set<String> = []
        let entries = words.compactMap { $0 }.filter { seen.insert($0).inserted }.compactMap { word -> HTML? in
            meaning(word).map { "<dt>\(word)</dt><dd>\($0)</dd>" }
        }
        guard !entries.isEmpty else { return "" }
        return "<details class=\"legend\"\(HTML(trusted: open ? " open" : ""))><summary>What these words mean</summary><dl class=\"facts\">\(entries)</dl></details>"
    }

    /// `quiet` drops the colour: an alert kind of a resolved alert is history, not trouble.
    static func badge(_ word: String?, quiet: Bool = false, meaning: (String) -> String? = Explanations.word) -> HTML {
        guard let word else { return "–" }
        let tone = quiet ? "neutral" : tone(of: word)
        let title: HTML = meaning(word).map { " title=\"\($0)\"" } ?? ""
        return "<span class=\"badge \(tone)\"\(title)>\(word)</span>"
    }

    private static func tone(of word: String) -> String {
        switch word {
        case "done", "credited", "already_credited", "restored", "acknowledged", "consumption_sent", "resolved": "ok"
        case "attention", "paid_not_credited", "config_error", "consumption_failed", "open", "receipt_replay", "stuck_verification": "bad"
        case "failed", "timed_out", "retrying", "replayed", "revoked": "warn"
        default: "neutral"
        }
    }

    static func csrfField(_ user: ConsoleUser) -> HTML {
        "<input type=\"hidden\" name=\"csrf\" value=\"\(user.csrfToken)\">"
    }

    static func notice(_ text: String?, tone: String = "ok") -> HTML {
        guard let text else { return "" }
        return "<p class=\"notice \(tone)\" role=\"status\">\(text)</p>"
    }

    /// The element a form's redirect scrolls to (`#outcome`): the outcome beside its row, else at the top.
    static let outcomeID = "outcome"

    /// A form's outcome at the top of the page, in its live region: shown there when the page has
    /// no row for it, else only read out (visually hidden), since `beside` shows it at the row.
    static func outcome(_ flash: Flash?, rowShown: Bool) -> HTML {
        guard let flash else { return "" }
        let place: HTML = rowShown ? " visually-hidden" : ""
        let anchor: HTML = rowShown ? "" : " id=\"\(outcomeID)\" tabindex=\"-1\""
        return "<p class=\"notice \(flash.tone)\(place)\" role=\"status\" aria-live=\"polite\"\(anchor)>\(flash.message)</p>"
    }

    /// The outcome (done, or refused and why) beside the row `rowID` it is about.
    static func beside(_ flash: Flash?, rowID: String) -> HTML {
        guard let flash, flash.rowID == rowID else { return "" }
        return "<p class=\"notice \(flash.tone) beside\" id=\"\(outcomeID)\" tabindex=\"-1\">\(flash.message)</p>"
    }

    /// A select whose options are fixed words; `selected` is a validated filter value.
    static func select(_ name: String, label: String, options: [String], selected: String?) -> HTML {
        let choices = options.map { option -> HTML in
            "<option value=\"\(option)\"\(HTML(trusted: option == selected ? " selected" : ""))>\(option)</option>"
        }
        return "<label>\(label) <select name=\"\(name)\"><option value=\"\">any</option>\(choices)</select></label>"
    }
}

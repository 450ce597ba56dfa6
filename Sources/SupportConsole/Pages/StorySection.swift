/// The top of a user page: the verdict to paste into a reply, then the buyer's story in time
/// order. The verdict is plain text in its own paragraph, selected whole by one click (CSS
/// `user-select: all`), so copying it needs no script.
struct StorySection {
    let activity: UserActivity

    func render() -> HTML {
        let story = BuyerStory(activity)
        let items = story.events.map { event -> HTML in
            let job: HTML = event.jobID.map { " \(Components.jobLink($0))" } ?? ""
            let word: HTML = event.word.map { "\(Components.badge($0, quiet: event.quiet)) " } ?? ""
            return "<li><time>\(DisplayFormat.time(event.at))</time> <span>\(word)\(event.text)\(job)</span></li>"
        }
        let verdict = BuyerVerdict.of(activity)
        let timeline: HTML = items.isEmpty ? "<p class=\"empty\">Nothing recorded for this user yet.</p>" : "<ol class=\"timeline\">\(items)</ol>"
        return """
            <section class="card story" aria-labelledby="verdict-heading"><h2 id="verdict-heading">Verdict</h2>\
            <p class="verdict" id="verdict" title="Click once to select it all, then copy">\(verdict.line)</p>\
            <p class="verdict-detail"><span class="why">For support, not the buyer:</span> \(verdict.detail)</p>\
            <h2>Story</h2>\(timeline)</section>
            """
    }
}

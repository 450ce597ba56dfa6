import Foundation
import HTTP
import Queue
import Settlement

extension ConsoleApp {
    package static let exactFinishedLimit = 10_000

    func addReadPages(to router: inout HTTPRouter) {
        router.get("/", readable { _, _, user, _ in
            // Finished jobs counted exactly up to 10,000 per state, then the partial index's row
            // estimate (shown as "~"): the overview must stay fast at a million jobs, and counting
            // up to status's cap (100,000 done and failed rows) would not.
            async let queue = QueueStatistics.snapshot(client, exactFinishedLimit: Self.exactFinishedLimit)
            async let alerts = AlertStatistics.openByKind(client)
            async let hour = ThroughputStore(client: client).lastHour()
            async let day = ThroughputStore(client: client).lastDay()
            async let settledSince = SettledSince.count(client)
            async let workers = WorkersAlive.load(client)
            let page = OverviewPage(queue: try await queue, openAlerts: try await alerts, hour: try await hour, day: try await day, now: Date(),
                                    settledSince: try await settledSince, workers: try await workers)
            return Responses.html(page.render(user))
        })
        router.get("/jobs", readable { _, _, user, form in
            guard let criteria = JobSearchCriteria(form) else { throw BadRequest("Unknown filter value or bad page cursor.") }
            let (jobs, hasMore) = try await JobSearch(client: client).page(criteria)
            return Responses.html(JobsPage(criteria: criteria, jobs: jobs, hasMore: hasMore).render(user))
        })
        router.get("/jobs/{id}", readable { _, params, user, _ in
            guard let id = params["id"].flatMap({ Int($0) }), id > 0 else { throw BadRequest("A job id is a positive whole number.") }
            guard let detail = try await JobDetails(client: client).load(id) else {
                return Responses.html(MessagePage.render(title: "Not found", message: "There is no job #\(id).", user: user), status: 404)
            }
            return Responses.html(JobPage(detail: detail).render(user))
        })
        router.get("/users", readable { request, _, user, form in
            let userID = try form.required("id", label: "A user id", maxLength: 500)
            let activity = try await UserActivityStore(client: client).load(userID, jobsBefore: try form.cursor("jobs_before"))
            let openOrders = try await OpenOrders.load(client, for: activity.alerts)
            return Responses.html(UserPage(activity: activity, context: try await formContext(request, form, user: user), openOrders: openOrders).render(user))
        })
        router.get("/find", readable { _, _, user, form in
            let text = try form.required("q", label: "What to find", maxLength: 500).trimmingCharacters(in: .whitespaces)
            let matches = try await ConsoleFind(client: client).find(text)
            // One match: straight there, as a search engine's "I'm feeling lucky".
            if matches.count == 1 { return Responses.redirect(matches[0].href) }
            return Responses.html(FindPage(text: text, matches: matches).render(user), status: matches.isEmpty ? 404 : 200)
        })
        router.get("/alerts", readable { request, _, user, form in
            let cursors = (open: try form.cursor("open_before"), resolved: try form.cursor("resolved_before"))
            let board = AlertBoard(client: client)
            // Paging through resolved alerts keeps the open ones in view only on the first page.
            let none: (alerts: [AlertRow], hasMore: Bool) = ([], false)
            let kind = form.text("kind")
            if let kind, !Explanations.alertKinds.keys.contains(kind) { throw BadRequest("Unknown alert kind.") }
            let open = cursors.resolved == nil ? try await board.page(state: "open", before: cursors.open, kind: kind) : none
            let resolved = cursors.open == nil ? try await board.page(state: "resolved", before: cursors.resolved, kind: kind) : none
            let page = AlertsPage(kind: kind, open: open.alerts, openHasMore: open.hasMore, resolved: resolved.alerts, resolvedHasMore: resolved.hasMore,
                                  cursors: cursors, context: try await formContext(request, form, user: user),
                                  openOrders: try await OpenOrders.load(client, for: open.alerts))
            return Responses.html(page.render(user))
        })
        router.get("/reconciliation", readable { _, _, user, form in
            let before = try ReconciliationBoard.cursor(form.text("before"))
            let (days, hasMore) = try await ReconciliationBoard(client: client).page(before: before)
            return Responses.html(ReconciliationPage(days: days, hasMore: hasMore, before: before).render(user))
        })
        router.get("/audit", readable { _, _, user, form in
            let before = try form.cursor("before")
            let entries = try await audit.page(before: before ?? Int.max, limit: 101)
            return Responses.html(AuditPage(entries: Array(entries.prefix(100)), hasMore: entries.count > 100, before: before).render(user))
        })
        router.get("/lookup", supportPage { request, _, user, form in
            // A lookup's POST leaves its results (or its failure) here; the find box hands an
            // unknown id over typed in but not yet sent to Apple.
            let context = try await formContext(request, form, user: user)
            let result = context.flash?.lookup
            let typed = context.flash?.fields["apple_order_id"] ?? form.text("apple_order_id")
            let expired = form.text("flash") != nil && context.flash == nil
            return Responses.html(LookupPage(available: lookup != nil, appleOrderID: result?.appleOrderID, typed: typed,
                                             transactions: result?.transactions ?? [], flash: context.flash, expired: expired).render(user))
        })
    }
}

import Observability
import Foundation
import Settlement

/// `notifications backfill --since 72h`: what Apple failed to deliver, pulled and enqueued once.
enum NotificationsCommand {
    static let spec = CommandSpec(
        name: "notifications",
        summary: "notifications backfill --since DURATION: pulls the notifications Apple failed to deliver and enqueues them; prints counts.",
        usage: "notifications backfill --since DURATION (e.g. 72h)",
        settings: AppStoreAccess.settings,
        flags: [CommandFlag(name: "since", takesValue: true, help: "how far back: decimal seconds or 90m, 72h (Apple keeps 180 days)")],
        positionals: 1...1,
        actions: ["backfill"])

    static func run(_ runtime: Runtime) async throws -> Int32 {
        guard runtime.options.positionals[0] == "backfill" else {
            throw UsageError("unknown notifications action '\(runtime.options.positionals[0])' (\(spec.actions.joined(separator: ", ")))")
        }
        guard let text = runtime.options.flag("since"), let since = SettlementWiring.seconds(text), since > 0 else {
            throw UsageError("notifications backfill needs --since DURATION, e.g. --since 72h")
        }
        let counts = try await AppStoreAccess.with(runtime, applicationName: "receipt-worker-notifications") { access in
            try await NotificationHistoryPuller(client: access.client, api: access.api, metrics: access.metrics, logger: runtime.logger)
                .backfill(since: since)
        }
        Console.print("notifications backfill: \(counts.pages) pages, \(counts.notifications) notifications Apple failed to deliver "
                      + "since \(Console.timestamp(counts.span.start)); \(counts.enqueued) enqueued as new jobs, "
                      + "\(counts.alreadyKnown) already queued")
        return 0
    }
}

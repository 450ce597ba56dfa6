import Observability
import Foundation
import Postgres
import Queue
import Settlement

enum StatusCommand {
    static let spec = CommandSpec(
        name: "status", summary: "Queue depth by state, oldest queued age, open alerts by kind.",
        usage: "status [--json] [--database-url URL]",
        settings: Settings.database + Settings.logging,
        flags: [CommandFlag(name: "json", takesValue: false, help: "print one JSON object")])

    static func run(_ runtime: Runtime) async throws -> Int32 {
        let client = try await runtime.connectDatabase(maxConnections: 1, applicationName: "receipt-worker-status")
        let report = try await StatusReport.load(client)
        await client.close()
        Console.print(runtime.options.has("json") ? report.json() : report.text())
        return 0
    }
}

/// The numbers `status` prints; the demo prints them too.
struct StatusReport {
    let queue: QueueSnapshot
    let openAlerts: [String: Int]

    static func load(_ client: PostgresClient) async throws -> StatusReport {
        StatusReport(queue: try await QueueStatistics.snapshot(client), openAlerts: try await AlertStatistics.openByKind(client))
    }

    func text() -> String {
        // "~" marks a finished state given as the planner's estimate (too many to count each time).
        let jobs = QueueSnapshot.states.map { state in
            "\(state)=\(queue.estimatedStates.contains(state) ? "~" : "")\(queue.jobsByState[state] ?? 0)"
        }.joined(separator: " ")
        let alerts = AlertStatistics.kinds.map { "\($0)=\(openAlerts[$0] ?? 0)" }.joined(separator: " ")
        return """
            jobs:         \(jobs)
            oldest queued: \(String(format: "%.1f", queue.oldestQueuedAgeSeconds)) s
            open alerts:  \(alerts)
            """
    }

    func json() -> String {
        let object: [String: Any] = [
            "jobs": queue.jobsByState,
            "estimated_states": queue.estimatedStates.sorted(),
            "oldest_queued_age_seconds": queue.oldestQueuedAgeSeconds,
            "open_alerts": openAlerts,
        ]
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}

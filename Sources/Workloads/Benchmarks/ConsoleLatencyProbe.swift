import Foundation
import HTTP
import Observability
import Postgres
import Queue
import Settlement
import SupportConsole

/// Times every console page against a running console over loopback: each figure is a full
/// request round trip (an upper bound of the server's own time), signed in as a support user.
public struct ConsoleLatencyProbe: Sendable {
    public struct Figure: Sendable {
        public let page: String
        public let p50Milliseconds: Double
        public let p95Milliseconds: Double
        public let statuses: Set<Int>
    }

    let client: PostgresClient
    let workload: ConsoleWorkload
    let samples: Int

    public init(client: PostgresClient, workload: ConsoleWorkload, samples: Int = 60) {
        self.client = client
        self.workload = workload
        self.samples = samples
    }

    /// The pages and, for each sample number, the path to ask for.
    func pages() -> [(name: String, path: (Int) -> String)] {
        let users = workload.users, jobs = workload.jobs
        func user(_ i: Int) -> String { "user-\((i * 7_919) % users)" }
        return [
            ("overview", { _ in "/" }),
            ("jobs", { _ in "/jobs" }),
            ("jobs_search_user", { "/jobs?q=\(user($0))" }),
            ("jobs_search_transaction", { "/jobs?q=\(workload.creditedTransaction($0))" }),
            ("jobs_search_order", { "/jobs?q=order-\(1 + ($0 * 104_729) % jobs)" }),
            ("jobs_search_job_id", { "/jobs?q=\(1 + ($0 * 104_729) % jobs)" }),
            ("jobs_filter_attention", { _ in "/jobs?state=attention" }),
            ("jobs_page_2", { "/jobs?before=\(jobs - 50 - $0)" }),
            ("job", { "/jobs/\(1 + ($0 * 104_729) % jobs)" }),
            ("user", { "/users?id=\(user($0))" }),
            ("alerts", { _ in "/alerts" }),
            ("alerts_resolved_older", { "/alerts?resolved_before=\(40_000 - $0)" }),
            ("lookup", { _ in "/lookup" }),
            ("audit", { _ in "/audit" }),
            ("reconciliation", { _ in "/reconciliation" }),
            ("reconciliation_older", { "/reconciliation?before=\(ReconciliationWorkload.day(daysAgo: 100 + $0))" }),
        ]
    }

    /// The benchmark's console runs with the default, Secure cookies.
    static let sessionCookie = CookiePolicy(secure: true).session

    public func run(port: Int) async throws -> [Figure] {
        try await ConsoleUsers(client: client, hasher: PasswordHasher(logN: 12, r: 8, p: 1))
            .add(name: "bench", role: .support, password: "bench-password")
        let token = try await SessionStore(client: client, lifetimeSeconds: 3600).create(for: "bench")
        let transport = try SocketHTTPTransport()
        var figures: [Figure] = []
        for page in pages() {
            var times: [Double] = []
            var statuses: Set<Int> = []
            for sample in -3..<samples {  // three warm-up requests first
                let url = URL(string: "http://127.0.0.1:\(port)\(page.path(abs(sample)))")!
                let start = ContinuousClock.now
                let response = try await transport.send(HTTPClientRequest(url: url, headers: [("Cookie", "\(Self.sessionCookie)=\(token)")]),
                                                        timeout: .seconds(30))
                let elapsed = ContinuousClock.now - start
                guard sample >= 0 else { continue }
                statuses.insert(response.status)
                times.append(Self.milliseconds(elapsed))
            }
            figures.append(Self.figure(page.name, times, statuses: statuses))
        }
        await transport.shutdown()
        return figures + (try await overviewParts())
    }

    /// The overview's statements one by one (the page runs them at once), to say which one costs.
    func overviewParts() async throws -> [Figure] {
        let throughput = ThroughputStore(client: client)
        let parts: [(String, @Sendable () async throws -> Void)] = [
            ("overview_part_queue_by_state", { _ = try await QueueStatistics.snapshot(client, exactFinishedLimit: ConsoleApp.exactFinishedLimit) }),
            ("overview_part_open_alerts", { _ = try await AlertStatistics.openByKind(client) }),
            ("overview_part_last_hour", { _ = try await throughput.lastHour() }),
            ("overview_part_last_day", { _ = try await throughput.lastDay() }),
        ]
        var figures: [Figure] = []
        for (name, part) in parts {
            var times: [Double] = []
            for sample in -3..<samples {
                let start = ContinuousClock.now
                try await part()
                if sample >= 0 { times.append(Self.milliseconds(start.duration(to: .now))) }
            }
            figures.append(Self.figure(name, times, statuses: [200]))
        }
        return figures
    }

    static func milliseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
    }

    static func figure(_ page: String, _ unsorted: [Double], statuses: Set<Int>) -> Figure {
        let times = unsorted.sorted()
        return Figure(page: page, p50Milliseconds: times[times.count / 2],
                      p95Milliseconds: times[min(times.count - 1, Int((Double(times.count) * 0.95).rounded(.up)) - 1)], statuses: statuses)
    }
}

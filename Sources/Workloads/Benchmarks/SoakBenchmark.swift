import AppleSim
import EmbeddedPostgres
import Foundation
import HTTP
import Observability
import Postgres
import Synchronization

/// `bench soak [--seconds N]`: the whole system at a steady load while it is being broken.
/// Real processes: 4 `work` and 1 `ingest` (spawned binaries, output to log files), apple-sim
/// in-process. For N seconds (default 120) receipts go in through the HTTP API at 200/s while
/// workers are SIGKILLed and restarted every ~10 s, Apple is slow (3–6 s) for a window and down
/// for another, PostgreSQL restarts once and a burst of malformed requests arrives. Then the
/// queue drains and the ledger is checked against what apple-sim answered as paid. One result
/// line; exit 0 only with no double credit, no lost receipt and no stuck job.
public struct SoakBenchmark: Sendable {
    let context: BenchContext

    public init(context: BenchContext) { self.context = context }

    static let receiptsPerSecond = 200.0
    static let workerCount = 4
    static let bundleID = "com.example.soak"
    /// Apple's everyday misbehaviour for the whole run: 5% 500/503, 3% resets, 2% hangs.
    static let backgroundFaults = AppleSimFaults(latency: SimLatency(min: .milliseconds(5), max: .milliseconds(50)),
                                                 errorRate: 0.05, hangRate: 0.02, resetRate: 0.03)
    /// After the feed stops, how long the queue may take to drain before the leftovers count as stuck.
    static let drainLimit: Duration = .seconds(180)

    public func run() async throws -> Int32 {
        let seconds = context.number("seconds", default: 120)
        return try await context.withDatabase { url, cluster in
            // Fresh per run: secrets to look for in the logs, and a tag that tells this run's rows apart.
            let secret = "soak-secret-" + UUID().uuidString
            let token = "soak-token-" + UUID().uuidString
            let tag = "soak-" + UUID().uuidString.prefix(8).lowercased()
            let client = PostgresClient(conninfo: url, maxConnections: 4, applicationName: "receipt-worker-bench-soak")
            let simulator = AppleSimulator(configuration: AppleSimConfiguration(sharedSecret: secret, faults: Self.backgroundFaults,
                                                                                hangLimit: .seconds(30)))
            let processes = try SoakProcesses()
            let transport = try SocketHTTPTransport(configuration: .init(maxIdleConnectionsPerHost: SoakFeeder.lanes))
            do {
                try await context.migrate(client)
                try simulator.start()
                let run = SoakRun(seconds: seconds, url: url, cluster: cluster, client: client, simulator: simulator,
                                  processes: processes, transport: transport, secret: secret, token: token, tag: tag)
                let passed = try await run.run()
                await Self.tearDown(processes, simulator, transport, client)
                if passed { processes.removeLogs() } else { FileHandle.standardError.write(Data("bench soak: logs kept in \(processes.logDirectory)\n".utf8)) }
                return passed ? 0 : 1
            } catch {
                await Self.tearDown(processes, simulator, transport, client)
                FileHandle.standardError.write(Data("bench soak: logs kept in \(processes.logDirectory)\n".utf8))
                throw error
            }
        }
    }

    /// Every child stopped (SIGTERM, then SIGKILL), hung Apple requests released, connections closed.
    private static func tearDown(_ processes: SoakProcesses, _ simulator: AppleSimulator,
                                 _ transport: SocketHTTPTransport, _ client: PostgresClient) async {
        _ = await processes.stopAll()
        await simulator.shutdown(grace: .seconds(2))
        await transport.shutdown()
        await client.close()
    }
}

/// One soak run: setup, feed + chaos side by side, drain, ledger check.
private struct SoakRun: Sendable {
    let seconds: Int
    let url: String
    let cluster: PrivateCluster?
    let client: PostgresClient
    let simulator: AppleSimulator
    let processes: SoakProcesses
    let transport: SocketHTTPTransport
    let secret: String
    let token: String
    let tag: String

    private var workerEnvironment: [String: String] {
        [
            "DATABASE_URL": url, "METRICS_LISTEN": "off", "LOG_LEVEL": "info", "LOG_FORMAT": "logfmt",
            "APPLE_BUNDLE_ID": SoakBenchmark.bundleID, "APPLE_SHARED_SECRET": secret,
            "APPLE_VERIFY_RECEIPT_URL": simulator.productionURL.absoluteString,
            "APPLE_VERIFY_RECEIPT_SANDBOX_URL": simulator.sandboxURL.absoluteString,
            // Above the slow window's 6 s (slow Apple is served, not timed out) and inside the
            // 8 s verify deadline a 10 s lease leaves; a hang costs a slot for 7 s.
            "APPLE_TIMEOUT_SECONDS": "7", "LEASE_SECONDS": "10",
            "RETRY_SCHEDULE": "0.5,1,2,4", "MAX_ATTEMPTS": "6", "SWEEP_INTERVAL_SECONDS": "2",
            "WORKER_CONCURRENCY": "300", "CLAIM_BATCH": "100", "SHUTDOWN_GRACE_SECONDS": "5",
        ]
    }

    private func startWorker(_ index: Int, replacement: Bool = false) throws {
        try processes.start("work-\(index)", ["work"], environment: workerEnvironment, replacement: replacement)
    }

    /// `--listen 127.0.0.1:PORT`: port 0 the first time (read back from `ingest_started`), the same port after a restart.
    private func startIngest(port: Int) throws {
        try processes.start("ingest", ["ingest", "--listen", "127.0.0.1:\(port)"], environment: [
            "DATABASE_URL": url, "INGEST_TOKEN": token, "LOG_LEVEL": "info", "LOG_FORMAT": "logfmt",
        ])
    }

    func run() async throws -> Bool {
        for index in 0..<SoakBenchmark.workerCount { try startWorker(index) }
        try startIngest(port: 0)
        let port = try await processes.ingestPort()
        let base = URL(string: "http://127.0.0.1:\(port)")!

        let count = Int(SoakBenchmark.receiptsPerSecond) * seconds
        let started = ContinuousClock.now
        let feedEnd = started + .seconds(seconds)
        let feeder = SoakFeeder(transport: transport, client: client, endpoint: base.appendingPathComponent("v1/receipts"),
                                token: token, tag: tag, rate: SoakBenchmark.receiptsPerSecond, count: count)
        async let fed = feeder.run(from: started, giveUpAt: feedEnd + .seconds(60))
        var chaos = try await breakThings(until: feedEnd, started: started, base: base, ingestPort: port)
        let feed = await fed

        // Apple back to its everyday faults; the workers keep running (crashed ones restarted) until the queue is empty.
        try simulator.setFaults(SoakBenchmark.backgroundFaults)
        let drainDeadline = ContinuousClock.now + SoakBenchmark.drainLimit
        while try await unfinishedJobs() > 0, ContinuousClock.now < drainDeadline {
            chaos.crashes += try restartCrashed(ingestPort: port)
            try await Task.sleep(for: .milliseconds(500))
        }
        let exits = await processes.stopAll()
        let check = try await checkLedger(acceptedJobs: feed.jobIDs)
        let leaks = processes.secretsInLogs([secret, token, SoakFeeder.receiptPrefix])
        let stats = simulator.stats
        let faulted = stats.byResult.filter { $0.key != "ok" }.values.reduce(0, +)

        let passed = check.doubleCredits == 0 && check.lost == 0 && check.stuck == 0
        let fields: KeyValuePairs<String, String> = [
            "receipts_in": "\(feed.jobIDs.count)", "credited_exactly_once": "\(check.creditedExactlyOnce)",
            "double_credits": "\(check.doubleCredits)", "lost": "\(check.lost)",
            "paid_not_credited_open": check.paidNotCreditedOpen, "apple_paid_not_in_ledger": "\(check.applePaidNotInLedger)",
            "stuck_jobs": "\(check.stuck)", "worker_kills": "\(chaos.kills)",
            "worker_restarts_survived": "\(processes.replacements.survived)/\(processes.replacements.started)",
            "unexpected_exits": "\(chaos.crashes)", "clean_shutdowns": "\(exits.clean)/\(exits.total)",
            "db_restarts": chaos.dbRestarts, "apple_outages": "1", "slow_apple_window_s": "\(chaos.slowSeconds)",
            "malformed_rejected": "\(chaos.malformed.rejected)/\(chaos.malformed.sent)",
            "malformed_jobs_written": "\(check.malformedJobs)",
            "feed_retries": "\(feed.retries)", "feed_rejected": "\(feed.rejected)", "feed_gave_up": "\(feed.gaveUp)",
            "apple_requests": "\(stats.requests)", "apple_faulted": "\(faulted)", "secrets_in_logs": "\(leaks)",
            "duration_s": "\(Int((ContinuousClock.now - started).seconds.rounded()))", "pass": passed ? "yes" : "no",
        ]
        Console.print("bench soak: " + fields.map { "\($0.key)=\($0.value.contains(" ") ? "\"\($0.value)\"" : $0.value)" }.joined(separator: " "))
        return passed
    }

    // MARK: chaos

    private struct Chaos {
        var kills = 0
        var crashes = 0
        var dbRestarts = "0"
        var slowSeconds = 0
        var malformed = (rejected: 0, sent: 0)
    }

    private enum Event { case slowStart, slowEnd, outage, dbRestart, malformedBurst }

    /// The fault timeline, as fractions of the feed window, plus a worker SIGKILL every 8–12 s.
    private func breakThings(until feedEnd: ContinuousClock.Instant, started: ContinuousClock.Instant,
                             base: URL, ingestPort: Int) async throws -> Chaos {
        var chaos = Chaos()
        let total = Double(seconds)
        chaos.slowSeconds = max(10, Int(total * 0.15))
        var schedule: [(at: Double, event: Event)] = [
            (total * 0.20, .slowStart), (total * 0.20 + Double(chaos.slowSeconds), .slowEnd),
            (total * 0.45, .outage), (total * 0.65, .dbRestart), (total * 0.80, .malformedBurst),
        ].sorted { $0.at < $1.at }
        var nextKill = 10.0
        var nextProgress = 5.0
        while ContinuousClock.now < feedEnd {
            let elapsed = (ContinuousClock.now - started).seconds
            while let next = schedule.first, next.at <= elapsed {
                schedule.removeFirst()
                try await apply(next.event, &chaos, base: base)
            }
            if elapsed >= nextKill {
                let victim = Int.random(in: 0..<SoakBenchmark.workerCount)
                await processes.sigkill("work-\(victim)")
                try startWorker(victim, replacement: true)
                chaos.kills += 1
                nextKill = elapsed + Double.random(in: 8...12)
            }
            chaos.crashes += try restartCrashed(ingestPort: ingestPort)
            if elapsed >= nextProgress {
                let credits = (try? await client.query("SELECT count(*) FROM iap.credits WHERE user_id LIKE $1", [tag + "-u%"])[0]
                    .decode(Int.self, at: 0)) ?? -1
                Console.progress("bench soak: \(Int(elapsed))/\(seconds)s credits=\(credits) worker_kills=\(chaos.kills) db_restarts=\(chaos.dbRestarts)")
                nextProgress = elapsed + 5
            }
            try await Task.sleep(for: .milliseconds(250))
        }
        Console.endProgress()
        return chaos
    }

    private func apply(_ event: Event, _ chaos: inout Chaos, base: URL) async throws {
        switch event {
        case .slowStart:
            var slow = SoakBenchmark.backgroundFaults
            slow.latency = SimLatency(min: .seconds(3), max: .seconds(6))
            try simulator.setFaults(slow)
        case .slowEnd:
            try simulator.setFaults(SoakBenchmark.backgroundFaults)
        case .outage:
            simulator.startOutage(for: .seconds(10))
        case .dbRestart:
            guard let cluster else {
                chaos.dbRestarts = "0(skipped:DATABASE_URL)"  // never restart a server we do not own
                return
            }
            do {
                try await cluster.restart()
                chaos.dbRestarts = "1"
            } catch {
                chaos.dbRestarts = "0(restart_failed)"
            }
        case .malformedBurst:
            chaos.malformed = await MalformedBurst.run(transport, base: base, token: token, tag: tag)
        }
    }

    /// Children that died without being killed are restarted; returns how many.
    private func restartCrashed(ingestPort: Int) throws -> Int {
        let exited = processes.reapExited()
        for name in exited {
            if name == "ingest" { try startIngest(port: ingestPort) } else { try startWorker(Int(name.dropFirst(5))!, replacement: true) }
        }
        return exited.count
    }

    // MARK: checks

    private func unfinishedJobs() async throws -> Int {
        try await client.query("SELECT count(*) FROM iap.jobs WHERE user_id LIKE $1 AND state IN ('queued', 'running', 'retrying', 'timed_out')",
                               [tag + "-u%"])[0].decode(Int.self, at: 0)
    }

    private struct LedgerCheck {
        var creditedExactlyOnce = 0
        var doubleCredits = 0
        var lost = 0
        var stuck = 0
        var paidNotCreditedOpen = "0"
        var applePaidNotInLedger = 0
        var malformedJobs = 0
    }

    private func checkLedger(acceptedJobs: [Int64]) async throws -> LedgerCheck {
        var check = LedgerCheck()
        let users = tag + "-u%"
        // Lost: acknowledged with 202, yet not finished as credited (or already credited).
        check.lost = try await client.query("""
            SELECT count(*) FROM unnest($1::bigint[]) AS a(id) LEFT JOIN iap.jobs j ON j.id = a.id
            WHERE NOT coalesce(j.state = 'done' AND j.outcome IN ('credited', 'already_credited'), false)
            """, [acceptedJobs])[0].decode(Int.self, at: 0)
        check.stuck = try await unfinishedJobs()
        // Each credit on its own order (tag-oN paid by tag-tN), and that order marked credited by it.
        check.creditedExactlyOnce = try await client.query("""
            SELECT count(*) FROM iap.credits c JOIN iap.orders o USING (order_id)
            WHERE c.user_id LIKE $1 AND o.status = 'credited' AND o.transaction_id = c.transaction_id
              AND c.transaction_id = $2 || '-t' || substr(c.order_id, length($2) + 3)
            """, [users, tag])[0].decode(Int.self, at: 0)
        // The keys make a second ledger row impossible; count anyway, plus the evidence a double
        // credit would leave elsewhere: two jobs each claiming to have credited one transaction,
        // or a replay alert (a paid transaction presented again for another order).
        check.doubleCredits = try await client.query("""
            SELECT (SELECT count(*) FROM (SELECT transaction_id FROM iap.credits WHERE user_id LIKE $1 GROUP BY 1 HAVING count(*) > 1) x)
                 + (SELECT count(*) FROM (SELECT order_id FROM iap.credits WHERE user_id LIKE $1 GROUP BY 1 HAVING count(*) > 1) x)
                 + (SELECT count(*) FROM (SELECT t FROM iap.jobs, unnest(transaction_ids) AS t
                                          WHERE user_id LIKE $1 AND outcome = 'credited' GROUP BY t HAVING count(*) > 1) x)
                 + (SELECT count(*) FROM iap.alerts WHERE kind = 'receipt_replay' AND user_id LIKE $1)
            """, [users])[0].decode(Int.self, at: 0)
        // Open paid_not_credited alerts, with their reasons when there are any.
        let alerts = try await client.query("""
            SELECT reason, count(*) FROM iap.alerts WHERE kind = 'paid_not_credited' AND state = 'open' AND user_id LIKE $1
            GROUP BY reason ORDER BY 2 DESC
            """, [users])
        let reasons = try alerts.map { "\(try $0.decode(String.self, at: 0)):\(try $0.decode(Int.self, at: 1))" }
        let open = try alerts.reduce(0) { $0 + (try $1.decode(Int.self, at: 1)) }
        check.paidNotCreditedOpen = open == 0 ? "0" : "\(open)(\(reasons.joined(separator: ",")))"
        // What Apple answered as paid must all be in the ledger once the queue is empty.
        let ledger = Set(try await client.query("SELECT transaction_id FROM iap.credits WHERE user_id LIKE $1", [users])
            .map { try $0.decode(String.self, at: 0) })
        check.applePaidNotInLedger = simulator.stats.paid.filter { $0.hasPrefix(tag + "-t") && !ledger.contains($0) }.count
        check.malformedJobs = try await client.query("SELECT count(*) FROM iap.jobs WHERE user_id = $1", [tag + "-bad"])[0]
            .decode(Int.self, at: 0)
        return check
    }
}

// MARK: - feeding

/// The web tier's side: per purchase an order row, then its receipt through `POST /v1/receipts`
/// on keep-alive connections, paced to a steady rate. Anything but a 202 or a 4xx is retried with
/// the same body (503 while PostgreSQL restarts, resets): the enqueue's dedup makes that safe.
private struct SoakFeeder: Sendable {
    static let lanes = 32
    /// Every minted receipt starts with base64 of `{"bundle_id"`: the marker for receipts leaked into logs.
    static let receiptPrefix = "eyJidW5kbGVfaWQi"

    let transport: SocketHTTPTransport
    let client: PostgresClient
    let endpoint: URL
    let token: String
    let tag: String
    let rate: Double
    let count: Int

    struct Result {
        var jobIDs: [Int64] = []
        var retries = 0
        var rejected = 0
        var gaveUp = 0
    }

    /// Lane L sends receipts L, L + lanes, ...; receipt N is due N / rate seconds after `start`.
    func run(from start: ContinuousClock.Instant, giveUpAt deadline: ContinuousClock.Instant) async -> Result {
        await withTaskGroup(of: Result.self) { group in
            for lane in 0..<Self.lanes {
                group.addTask {
                    var result = Result()
                    for index in stride(from: lane, to: count, by: Self.lanes) where !Task.isCancelled {
                        try? await Task.sleep(until: start + .seconds(Double(index) / rate), clock: .continuous)
                        await submit(index, deadline: deadline, into: &result)
                    }
                    return result
                }
            }
            return await group.reduce(into: Result()) { total, part in
                total.jobIDs += part.jobIDs
                total.retries += part.retries
                total.rejected += part.rejected
                total.gaveUp += part.gaveUp
            }
        }
    }

    private func submit(_ index: Int, deadline: ContinuousClock.Instant, into result: inout Result) async {
        let order = "\(tag)-o\(index)", user = "\(tag)-u\(index % 2_000)"
        let receipt = SimReceipt(bundleID: SoakBenchmark.bundleID,
                                 transactions: [.init(transactionID: "\(tag)-t\(index)", productID: "coins_100")]).mint()
        let body = #"{"user_id":"\#(user)","order_id":"\#(order)","product_id":"coins_100","receipt_data":"\#(receipt)"}"#
        let request = HTTPClientRequest(method: "POST", url: endpoint, headers: [("Authorization", "Bearer \(token)"),
                                                                                 ("Content-Type", "application/json")],
                                        body: Array(body.utf8))
        var orderCreated = false
        var delay = 0.1
        while ContinuousClock.now < deadline, !Task.isCancelled {  // cancelled: the run failed elsewhere
            do {
                // The order exists before its receipt is uploaded, as in the app's purchase flow.
                if !orderCreated {
                    _ = try await client.query("INSERT INTO iap.orders (order_id, user_id, product_id) VALUES ($1, $2, 'coins_100') ON CONFLICT DO NOTHING",
                                               [order, user])
                    orderCreated = true
                }
                let response = try await transport.send(request, timeout: .seconds(10))
                if response.status == 202, let id = Self.jobID(response.body) {
                    result.jobIDs.append(id)
                    return
                }
                if (400..<500).contains(response.status), response.status != 429 {
                    result.rejected += 1  // a good receipt refused: shows in the line, never retried
                    return
                }
            } catch {}
            result.retries += 1
            try? await Task.sleep(for: .seconds(delay))
            delay = min(delay * 2, 2)
        }
        result.gaveUp += 1
    }

    private static func jobID(_ body: [UInt8]) -> Int64? {
        struct Accepted: Decodable { let job_id: Int64 }
        return try? JSONDecoder().decode(Accepted.self, from: Data(body)).job_id
    }
}

/// A few hundred requests no client should send. Each must get a 4xx (an oversize body may
/// instead see its connection closed) and none may write a job (checked at the end by user id).
private enum MalformedBurst {
    static let requests = 300

    static func run(_ transport: SocketHTTPTransport, base: URL, token: String, tag: String) async -> (rejected: Int, sent: Int) {
        let user = "\(tag)-bad"
        let receipt = SimReceipt(bundleID: SoakBenchmark.bundleID, transactions: [.init(transactionID: "\(tag)-bad", productID: "coins_100")]).mint()
        let valid = #"{"user_id":"\#(user)","receipt_data":"\#(receipt)"}"#
        let json = ("Content-Type", "application/json")
        let auth = [("Authorization", "Bearer \(token)"), json]
        let oversize = #"{"user_id":"\#(user)","receipt_data":""# + String(repeating: "A", count: 4 * 1_048_576 + 1) + #""}"#
        let cases: [(method: String, path: String, headers: HTTPHeaderFields, body: String)] = [
            ("POST", "v1/receipts", auth, #"{"user_id":"#),                                         // truncated JSON
            ("POST", "v1/receipts", auth, "not json"),
            ("POST", "v1/receipts", auth, "[1,2,3]"),
            ("POST", "v1/receipts", auth, #"{"user_id":42,"receipt_data":"\#(receipt)"}"#),          // wrong types
            ("POST", "v1/receipts", auth, #"{"user_id":"\#(user)","receipt_data":["x"]}"#),
            ("POST", "v1/receipts", auth, #"{"user_id":"","receipt_data":"\#(receipt)"}"#),          // empty
            ("POST", "v1/receipts", auth, #"{"user_id":"\#(user)"}"#),                               // missing
            ("POST", "v1/receipts", auth, #"{"user_id":"\#(user)","receipt_data":"%% not base64 %%"}"#),
            ("POST", "v1/receipts", [json], valid),                                                  // no token
            ("POST", "v1/receipts", [("Authorization", "Bearer wrong"), json], valid),
            ("GET", "v1/receipts", auth, ""),
            ("POST", "v1/nowhere", auth, valid),
            ("POST", "v1/receipts", auth, oversize),                                                 // over --max-body
        ]
        let oversized = cases.count - 1
        let lanes = 10
        return await withTaskGroup(of: (Int, Int).self) { group in
            for lane in 0..<lanes {
                group.addTask {
                    var rejected = 0, sent = 0
                    for index in stride(from: lane, to: requests, by: lanes) {
                        // Oversize bodies are 4 MiB each: one in fifty is plenty.
                        var pick = index % cases.count
                        if pick == oversized, index % 50 != 12 { pick = 0 }
                        let c = cases[pick]
                        let request = HTTPClientRequest(method: c.method, url: base.appendingPathComponent(c.path),
                                                        headers: c.headers, body: Array(c.body.utf8))
                        let status = try? await transport.send(request, timeout: .seconds(10)).status
                        sent += 1
                        if let status, (400..<500).contains(status) { rejected += 1 } else if status == nil, pick == oversized { rejected += 1 }
                    }
                    return (rejected, sent)
                }
            }
            return await group.reduce(into: (rejected: 0, sent: 0)) { $0.rejected += $1.0; $0.sent += $1.1 }
        }
    }
}

// MARK: - processes

/// The soak's children, each a `receipt-worker` whose stdout and stderr go to its own log file
/// (`/bin/sh` only redirects, then `exec`s, so the pid is the receipt-worker's own).
private final class SoakProcesses: Sendable {
    private struct Child {
        var pid: pid_t
        /// Started after a kill or crash: counted as survived when it lives until it is stopped.
        var replacement: Bool
    }
    private struct State {
        var children: [String: Child] = [:]
        var replacementsStarted = 0
        var replacementsSurvived = 0
    }

    let logDirectory: String
    private let binary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().path
    private let state = Mutex(State())

    init() throws {
        var template = Array("/tmp/receipt-worker-soak.XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw WorkloadError("cannot create a temp folder in /tmp") }
        logDirectory = String(cString: made)
    }

    /// Processes started after a kill or crash, and how many of them lived until killed again or stopped cleanly.
    var replacements: (started: Int, survived: Int) { state.withLock { ($0.replacementsStarted, $0.replacementsSurvived) } }

    private func logPath(_ name: String) -> String { "\(logDirectory)/\(name).log" }

    func start(_ name: String, _ arguments: [String], environment: [String: String], replacement: Bool = false) throws {
        let pid = try WorkerSpawner.spawn("/bin/sh", ["-c", #"exec "$@" >>"$0" 2>&1"#, logPath(name), binary] + arguments,
                                          environment: environment)
        state.withLock { state in
            state.children[name] = Child(pid: pid, replacement: replacement)
            if replacement { state.replacementsStarted += 1 }
        }
    }

    /// The port from the ingest process's `event=ingest_started ... port=N` line.
    func ingestPort() async throws -> Int {
        for _ in 0..<150 {
            let log = (try? String(contentsOfFile: logPath("ingest"), encoding: .utf8)) ?? ""
            if let line = log.split(separator: "\n").first(where: { $0.contains("event=ingest_started") }),
               let field = line.split(separator: " ").first(where: { $0.hasPrefix("port=") }), let port = Int(field.dropFirst(5)) {
                return port
            }
            if !reapExited().isEmpty { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw WorkloadError("bench soak: the ingest process did not start (see \(logPath("ingest")))")
    }

    /// SIGKILL, as a crash or the OOM killer would, then reaped.
    func sigkill(_ name: String) async {
        guard let child = state.withLock({ $0.children.removeValue(forKey: name) }) else { return }
        var status: Int32 = 0
        if waitpid(child.pid, &status, WNOHANG) == 0, child.replacement {
            state.withLock { $0.replacementsSurvived += 1 }
        }
        kill(child.pid, SIGKILL)
        await reap(child.pid, within: .seconds(5))
    }

    /// Names of children that exited on their own since the last call.
    func reapExited() -> [String] {
        state.withLock { state in
            let exited = state.children.filter { _, child in
                var status: Int32 = 0
                return waitpid(child.pid, &status, WNOHANG) == child.pid
            }.map(\.key)
            for name in exited { state.children[name] = nil }
            return exited
        }
    }

    /// SIGTERM to all, up to 15 s for a graceful exit, then SIGKILL. Returns how many exited 0.
    func stopAll() async -> (clean: Int, total: Int) {
        let children = state.withLock { state in
            defer { state.children.removeAll() }
            return state.children.values.map { $0 }
        }
        for child in children { kill(child.pid, SIGTERM) }
        var clean = 0
        for child in children {
            let status = await reap(child.pid, within: .seconds(15))
            // A normal exit has the low 7 bits 0, the code in the next byte (WIFEXITED/WEXITSTATUS).
            if let status, status & 0x7f == 0, (status >> 8) & 0xff == 0 {
                clean += 1
                if child.replacement { state.withLock { $0.replacementsSurvived += 1 } }
            }
        }
        return (clean, children.count)
    }

    /// Waits for `pid` to end; SIGKILLs it when `limit` passes. The wait status, nil if it had to be killed.
    @discardableResult
    private func reap(_ pid: pid_t, within limit: Duration) async -> Int32? {
        let deadline = ContinuousClock.now + limit
        var status: Int32 = 0
        while ContinuousClock.now < deadline {
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid { return status }
            if result < 0 { return nil }  // not our child any more
            try? await Task.sleep(for: .milliseconds(50))
        }
        kill(pid, SIGKILL)
        waitpid(pid, &status, 0)
        return nil
    }

    /// Occurrences of any of `secrets` in the children's logs (must be 0: secrets never reach a log).
    func secretsInLogs(_ secrets: [String]) -> Int {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: logDirectory)) ?? []
        return files.reduce(0) { total, file in
            let text = (try? String(contentsOfFile: "\(logDirectory)/\(file)", encoding: .utf8)) ?? ""
            return total + secrets.reduce(0) { $0 + text.components(separatedBy: $1).count - 1 }
        }
    }

    func removeLogs() { try? FileManager.default.removeItem(atPath: logDirectory) }
}

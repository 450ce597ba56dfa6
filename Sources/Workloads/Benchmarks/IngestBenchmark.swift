import AppleSim
import Foundation
import HTTP
import Ingest
import Observability
import Postgres

/// `bench ingest`: committed receipts per second through the HTTP API (an in-process
/// `IngestServer` driven by keep-alive clients), then NDJSON lines per second through `BulkLoader`.
/// `--jobs N` sets the HTTP requests (default 30000), `--concurrency N` the client connections (default 64).
/// With `--wrk` the HTTP API is driven by wrk from outside instead, for `--seconds` (default 15).
public struct IngestBenchmark: Sendable {
    let context: BenchContext

    public init(context: BenchContext) { self.context = context }

    static let targetCommittedPerSecond = 5_000.0
    static let targetP99Milliseconds = 50.0
    static let wrkTargetPerSecond = 10_000.0
    static let wrkTargetP99Milliseconds = 20.0
    static let targetLinesPerSecond = 50_000.0
    static let ndjsonLines = 200_000

    /// A job is a row in each of iap.job_requests and iap.job_queue (migration 0024).
    static let removeJobsSQL = """
        WITH gone AS (DELETE FROM iap.job_requests WHERE user_id LIKE $1 RETURNING id)
        DELETE FROM iap.job_queue q USING gone WHERE q.id = gone.id
        """

    public func run() async throws -> Int32 {
        let requests = context.number("jobs", default: 30_000)
        let clients = context.number("concurrency", default: 64)
        return try await context.withDatabase { url, cluster in
            let client = PostgresClient(conninfo: url, maxConnections: 2, applicationName: "receipt-worker-bench")
            do {
                try await context.migrate(client)
                BenchReport.line("ingest", "setup", ["database": cluster == nil ? "DATABASE_URL" : "private cluster (fsync=off)",
                                 "cores": "\(ProcessInfo.processInfo.activeProcessorCount)",
                                 "db_connections": "\(context.databasePoolSize)"])
                // A tag of our own: with DATABASE_URL the rows are told apart from real ones, and removed after.
                let tag = "bench-ingest-" + UUID().uuidString.prefix(8).lowercased()
                if context.decimals["wrk"] != nil {
                    try await measureWithWrk(client, url: url, tag: tag, clients: clients, seconds: context.number("seconds", default: 15))
                } else {
                    try await measure(client, url: url, tag: tag, requests: requests, clients: clients)
                }
                if cluster == nil { try await removeRows(client, tag: tag) }
            } catch {
                await client.close()
                throw error
            }
            await client.close()
            return 0
        }
    }

    /// The run's rows removed, then the job tables vacuumed, outside any timing. Left to
    /// autovacuum, the vacuum of these dead rows starts within its next minute: inside the next
    /// run, when runs follow each other (a p99 of 57 ms beside 9–30 ms, docs/benchmarks.md).
    private func removeRows(_ client: PostgresClient, tag: String) async throws {
        let started = ContinuousClock.now
        let removed = try await client.query(Self.removeJobsSQL, [tag + "-%"]).affectedRows
        _ = try await client.query(QueueProbe.vacuumJobTablesSQL)
        BenchReport.line("ingest", "cleanup", ["jobs_removed": "\(removed)",
                                               "seconds": BenchReport.figure((ContinuousClock.now - started).seconds)])
    }

    private func measure(_ client: PostgresClient, url: String, tag: String, requests: Int, clients: Int) async throws {
        let http = try await httpIngest(url: url, tag: tag + "-h", requests: requests, clients: clients)
        let rows = try await client.query("SELECT count(*) FROM iap.jobs WHERE user_id LIKE $1", [tag + "-h-%"])[0].decode(Int.self, at: 0)
        BenchReport.line("ingest", "http", ["http_committed_per_s": BenchReport.figure(http.committedPerSecond), "p50_ms": BenchReport.figure(http.p50),
                        "p99_ms": BenchReport.figure(http.p99), "errors": "\(http.errors)", "clients": "\(clients)",
                        "requests": "\(requests)", "warmup": "\(http.warmup)", "rows_committed": "\(rows)", "body_bytes": "\(http.bodyBytes)",
                        "process_cpu_us_per_request": BenchReport.figure(http.cpuMicrosPerRequest),
                        "target": ">=\(Int(Self.targetCommittedPerSecond))/s p99<\(Int(Self.targetP99Milliseconds))ms",
                        "meets_target": verdict(http.committedPerSecond >= Self.targetCommittedPerSecond
                                                && http.p99 < Self.targetP99Milliseconds && http.errors == 0)])

        let bulk = try await ndjsonLoad(url: url, tag: tag + "-n")
        BenchReport.line("ingest", "ndjson", ["ndjson_lines_per_s": BenchReport.figure(bulk.linesPerSecond), "lines": "\(bulk.linesRead)",
                          "loaded": "\(bulk.loaded)", "rejected": "\(bulk.rejected)",
                          "target": ">=\(Int(Self.targetLinesPerSecond))/s",
                          "meets_target": verdict(bulk.linesPerSecond >= Self.targetLinesPerSecond)])
    }

    // MARK: HTTP

    private struct HTTPResult {
        var committedPerSecond: Double
        var p50: Double
        var p99: Double
        var errors: Int
        var bodyBytes: Int
        var warmup: Int
        /// Server and client together (PostgreSQL not included): a figure less sensitive to a busy host.
        var cpuMicrosPerRequest: Double
    }

    private func httpIngest(url: String, tag: String, requests: Int, clients: Int) async throws -> HTTPResult {
        let token = UUID().uuidString
        let database = PostgresClient(conninfo: url, maxConnections: context.databasePoolSize,
                                      applicationName: "receipt-worker-bench-ingest")
        let server = try IngestServer(configuration: .init(listen: "127.0.0.1:0", token: token), database: database,
                                      logger: Logger(minimumLevel: .warning))
        let port = try server.start()
        let transport = try SocketHTTPTransport(configuration: .init(maxIdleConnectionsPerHost: clients))
        let endpoint = URL(string: "http://127.0.0.1:\(port)/v1/receipts")!
        let headers: HTTPHeaderFields = [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")]
        // Bodies are built before the clock starts: the benchmark measures the server, not JSON encoding.
        let warmup = clients * 2
        let bodies = (0..<(warmup + requests)).map { Array(Self.receiptLine(tag: tag, index: $0).utf8) }

        // Client c sends requests c, c + clients, c + 2 * clients, ... of the range, one at a time.
        @Sendable func drive(_ indices: StrideTo<Int>) async -> (latencies: [Double], errors: Int) {
            var latencies: [Double] = []
            var errors = 0
            for index in indices {
                let request = HTTPClientRequest(method: "POST", url: endpoint, headers: headers, body: bodies[index])
                let started = ContinuousClock.now
                let status = (try? await transport.send(request, timeout: .seconds(30)))?.status
                latencies.append((ContinuousClock.now - started).seconds * 1000)
                if status != 202 { errors += 1 }
            }
            return (latencies, errors)
        }
        func round(_ range: Range<Int>) async -> (latencies: [Double], errors: Int) {
            await withTaskGroup(of: (latencies: [Double], errors: Int).self) { group in
                for lane in 0..<clients {
                    group.addTask { await drive(stride(from: range.lowerBound + lane, to: range.upperBound, by: clients)) }
                }
                var merged: (latencies: [Double], errors: Int) = ([], 0)
                for await part in group {
                    merged.latencies += part.latencies
                    merged.errors += part.errors
                }
                return merged
            }
        }

        _ = await round(0..<warmup)  // opens the keep-alive connections and the database pool
        let started = ContinuousClock.now
        let cpuBefore = ResourceUsage.cpuSeconds()
        let measured = await round(warmup..<(warmup + requests))
        let seconds = (ContinuousClock.now - started).seconds
        let cpu = ResourceUsage.cpuSeconds() - cpuBefore
        await transport.shutdown()
        await server.shutdown(grace: .seconds(2))
        await database.close()

        let latencies = measured.latencies.sorted()
        return HTTPResult(committedPerSecond: Double(requests - measured.errors) / seconds,
                          p50: BenchReport.percentile(latencies, 0.50), p99: BenchReport.percentile(latencies, 0.99), errors: measured.errors,
                          bodyBytes: bodies.first?.count ?? 0, warmup: warmup, cpuMicrosPerRequest: cpu / Double(requests) * 1e6)
    }

    // MARK: wrk

    /// The in-process server, wrk outside: a warm-up run, then the measured one. The CPU per
    /// request is this process's (the server alone: the client is wrk) and PostgreSQL's.
    private func measureWithWrk(_ client: PostgresClient, url: String, tag: String, clients: Int, seconds: Int) async throws {
        guard IngestLoadByWrk.isInstalled else { throw WorkloadError("bench ingest --wrk needs \(IngestLoadByWrk.executable) (apt-get install wrk)") }
        let token = UUID().uuidString
        let database = PostgresClient(conninfo: url, maxConnections: context.databasePoolSize, applicationName: "receipt-worker-bench-ingest")
        let server = try IngestServer(configuration: .init(listen: "127.0.0.1:0", token: token), database: database,
                                      logger: Logger(minimumLevel: .warning))
        let port = try server.start()
        let unpadded = Self.receipt(tag: tag, index: 0).filter { $0 != "=" }
        let load = IngestLoadByWrk(port: port, token: token, connections: clients,
                                   receiptPrefix: String(unpadded.prefix(unpadded.count / 4 * 4)))
        let databaseCPU = await DatabaseServerCPU.locate(client)
        do {
            _ = try await load.run(tag: tag + "-w0", seconds: 2)
            // The run's CPU as one "job" (its request count is known only after it), then per request.
            let (result, cpu) = try await CPUPerJob.measure(jobs: 1, server: databaseCPU) {
                try await load.run(tag: tag + "-w1", seconds: seconds)
            }
            let rows = try await client.query("SELECT count(*) FROM iap.jobs WHERE user_id LIKE $1", [tag + "-w1-%"])[0].decode(Int.self, at: 0)
            let perRequest = { (micros: Double) in micros / Double(max(1, result.requests)) }
            BenchReport.line("ingest", "wrk", [
                ("requests_per_s", BenchReport.figure(result.requestsPerSecond)), ("p50_ms", BenchReport.figure(result.p50Milliseconds)),
                ("p99_ms", BenchReport.figure(result.p99Milliseconds)), ("errors", "\(result.errors)"), ("requests", "\(result.requests)"),
                ("rows_committed", "\(rows)"), ("connections", "\(clients)"), ("wrk_threads", "1"), ("seconds", "\(seconds)"),
                ("ingest_cpu_us_per_request", BenchReport.figure(perRequest(cpu.process)))]
                + (cpu.database.map { [("db_cpu_us_per_request", BenchReport.figure(perRequest($0)))] } ?? [])
                + [("target", ">=\(Int(Self.wrkTargetPerSecond))/s p99<\(Int(Self.wrkTargetP99Milliseconds))ms"),
                   ("meets_target", verdict(result.requestsPerSecond >= Self.wrkTargetPerSecond
                                            && result.p99Milliseconds < Self.wrkTargetP99Milliseconds && result.errors == 0))])
        } catch {
            await server.shutdown(grace: .seconds(2))
            await database.close()
            throw error
        }
        await server.shutdown(grace: .seconds(2))
        await database.close()
    }

    // MARK: NDJSON

    private func ndjsonLoad(url: String, tag: String) async throws -> BulkLoadStats {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("\(tag).ndjson")
        defer { try? FileManager.default.removeItem(at: file) }
        let lines = (0..<Self.ndjsonLines).map { Self.receiptLine(tag: tag, index: $0) }
        try await Self.offThePool { try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: file) }
        // The same pool size `ingest --file` uses: one connection per parallel batch.
        let options = BulkLoadOptions()
        let client = PostgresClient(conninfo: url, maxConnections: options.parallelBatches, applicationName: "receipt-worker-bench-ndjson")
        do {
            let stats = try await BulkLoader(client: client, options: options).load(.path(file.path))
            await client.close()
            return stats
        } catch {
            await client.close()
            throw error
        }
    }

    // MARK: helpers

    /// One `POST /v1/receipts` body with a distinct receipt the simulator would accept.
    static func receiptLine(tag: String, index: Int) -> String {
        #"{"user_id":"\#(tag)-u\#(index % 1_000)","order_id":"\#(tag)-o\#(index)","product_id":"coins_100","receipt_data":"\#(receipt(tag: tag, index: index))"}"#
    }

    /// The receipt of request `index`: one the simulator would accept.
    static func receipt(tag: String, index: Int) -> String {
        SimReceipt(bundleID: "com.example.bench", transactions: [.init(transactionID: "\(tag)-t\(index)", productID: "coins_100")]).mint()
    }

    /// Blocking file I/O on a thread of its own, never on the cooperative pool.
    private static func offThePool(_ work: @escaping @Sendable () throws -> Void) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
            Thread { continuation.resume(with: Result { try work() }) }.start()
        }
    }

    private func verdict(_ met: Bool) -> String { met ? "yes" : "no" }


}

import EmbeddedPostgres
import Foundation

/// `bench ingest --wrk`: the ingest API driven from outside the process by wrk (Debian's), one
/// thread and `connections` keep-alive connections, each request a distinct receipt made by a
/// Lua script (a counter in the order id and the receipt), so the figure is an outside client's.
struct IngestLoadByWrk: Sendable {
    static let executable = "/usr/bin/wrk"

    struct Result: Sendable {
        let requests: Int
        let seconds: Double
        let errors: Int
        let p50Milliseconds: Double
        let p99Milliseconds: Double
        var requestsPerSecond: Double { Double(requests) / max(seconds, 1e-9) }
    }

    let port: Int
    let token: String
    let connections: Int
    /// A valid base64 prefix (a multiple of 4 characters, no padding); the counter's 12 digits follow.
    let receiptPrefix: String

    static var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: executable) }

    /// One wrk run of `seconds`; the rows it makes carry `tag` in their user and order ids.
    func run(tag: String, seconds: Int) async throws -> Result {
        let script = FileManager.default.temporaryDirectory.appendingPathComponent("receipt-worker-wrk-\(tag).lua")
        try Data(luaScript(tag: tag).utf8).write(to: script)
        defer { try? FileManager.default.removeItem(at: script) }
        let arguments = [Self.executable, "-t1", "-c\(connections)", "-d\(seconds)s", "--timeout", "10s", "-s", script.path,
                         "http://127.0.0.1:\(port)/v1/receipts"]
        let output = try await CommandRunner.offPool { try CommandRunner.run(arguments) }
        guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("wrk_result ") }) else {
            throw WorkloadError("wrk printed no result: \(output.suffix(300))")
        }
        var fields: [String: Double] = [:]
        for pair in line.split(separator: " ").dropFirst() {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2, let value = Double(parts[1]) { fields[String(parts[0])] = value }
        }
        return Result(requests: Int(fields["requests"] ?? 0), seconds: (fields["duration_us"] ?? 0) / 1e6, errors: Int(fields["errors"] ?? 0),
                      p50Milliseconds: (fields["p50_us"] ?? 0) / 1000, p99Milliseconds: (fields["p99_us"] ?? 0) / 1000)
    }

    /// The body is the same shape as `IngestBenchmark.receiptLine`'s; non-2xx answers are wrk's status errors.
    private func luaScript(tag: String) -> String {
        """
        local counter = 0
        local headers = { ["Authorization"] = "Bearer \(token)", ["Content-Type"] = "application/json" }
        request = function()
          counter = counter + 1
          local body = string.format('{"user_id":"\(tag)-u%d","order_id":"\(tag)-o%d","product_id":"coins_100","receipt_data":"\(receiptPrefix)%012d"}',
                                     counter % 1000, counter, counter)
          return wrk.format("POST", nil, headers, body)
        end
        done = function(summary, latency, requests)
          local e = summary.errors
          io.write(string.format("wrk_result requests=%d duration_us=%d errors=%d p50_us=%d p99_us=%d\\n",
                                 summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout + e.status,
                                 latency:percentile(50), latency:percentile(99)))
        end
        """
    }
}

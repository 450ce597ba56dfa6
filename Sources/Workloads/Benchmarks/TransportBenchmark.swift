import AppStore
import AppleSim
import Foundation
import HTTP
import Observability

/// `bench transport`: the HTTP clients alone under Apple-shaped load — `--concurrency`
/// requests always in flight (default 2000) answered after 3 s, for `--seconds` (default 20):
/// the socket transport to apple-sim (http), the socket transport over TLS to a local https
/// server (how the worker reaches Apple), and FoundationNetworking's URLSession to apple-sim,
/// kept for comparison (it stalls under this load).
public struct TransportBenchmark: Sendable {
    let context: BenchContext

    public init(context: BenchContext) { self.context = context }

    public func run() async throws -> Int32 {
        let concurrency = context.number("concurrency", default: 2_000)
        let seconds = Double(context.number("seconds", default: 20))
        let simulator = AppleSimulator(configuration: AppleSimConfiguration(faults: AppleSimFaults(latency: SimLatency(.seconds(3)))))
        _ = try simulator.start()
        defer { Task { await simulator.shutdown() } }
        let body = VerifyReceiptRequestBody(receiptData: SimReceipt(
            bundleID: "com.example.bench", transactions: [.init(transactionID: "bench-1", productID: "coins_100")]).mint()).json
        let request = HTTPClientRequest(method: "POST", url: simulator.productionURL,
                                        headers: [("Content-Type", "application/json")], body: body)
        BenchReport.line("transport", "setup", ["in_flight": "\(concurrency)", "apple_latency_s": "3",
                         "ceiling_per_s": BenchReport.figure(Double(concurrency) / 3), "seconds": BenchReport.figure(seconds)])
        let socket = try SocketHTTPTransport()
        let socketResult = await measure(socket, request: request, concurrency: concurrency, seconds: seconds)
        await socket.shutdown()
        report("socket", socketResult)

        // The same client over TLS, as it reaches Apple: every connection a verified handshake.
        let certificates = try LoopbackTLSCertificates.make()
        defer { certificates.remove() }
        let answer = Array(#"{"status":0,"environment":"Production","receipt":{"bundle_id":"com.example.bench","in_app":[]}}"#.utf8)
        let tlsServer = try LoopbackTLSServer(certificate: certificates.serverCertificate, key: certificates.serverKey,
                                              latency: .seconds(3), respond: { _ in answer })
        let tls = try SocketHTTPTransport(configuration: .init(trustedCertificatesFile: certificates.caFile))
        var tlsRequest = request
        tlsRequest.url = URL(string: "https://localhost:\(tlsServer.port)/verifyReceipt")!
        let tlsResult = await measure(tls, request: tlsRequest, concurrency: concurrency, seconds: seconds)
        await tls.shutdown()
        tlsServer.stop()
        report("socket_tls", tlsResult)

        let urlSession = URLSessionTransport(maxConnectionsPerHost: concurrency)
        report("urlsession", await measure(urlSession, request: request, concurrency: concurrency, seconds: seconds))
        return 0
    }

    private struct Result {
        var answered = 0
        var failed = 0
        var failures: [String: Int] = [:]
        var seconds = 0.0
        var slowest = 0.0
    }

    private func report(_ name: String, _ result: Result) {
        BenchReport.line("transport", name, [
            "answered_per_s": BenchReport.figure(Double(result.answered) / result.seconds),
            "answered": "\(result.answered)", "failed": "\(result.failed)",
            "failures": result.failures.isEmpty ? "none" : result.failures.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: ","),
            "slowest_s": BenchReport.figure(result.slowest), "process_peak_rss_mb": BenchReport.figure(ResourceUsage.peakRSSMiB()),
        ])
    }

    /// The error's case name (messages may be long and are not the point here).
    private static func label(_ error: Error) -> String {
        guard let error = error as? HTTPClientError else { return "other" }
        return String("\(error)".prefix { $0.isLetter || $0 == "_" })
    }

    /// `concurrency` lanes, each sending one request after another until the time is up.
    private func measure(_ transport: HTTPTransport, request: HTTPClientRequest, concurrency: Int, seconds: Double) async -> Result {
        let started = ContinuousClock.now
        let end = started + .milliseconds(Int64(seconds * 1000))
        let total = await withTaskGroup(of: Result.self) { group in
            for _ in 0..<concurrency {
                group.addTask {
                    var lane = Result()
                    while ContinuousClock.now < end {
                        let sent = ContinuousClock.now
                        do {
                            let response = try await transport.send(request, timeout: .seconds(15))
                            if response.status == 200 { lane.answered += 1 } else {
                                lane.failed += 1
                                lane.failures["http_\(response.status)", default: 0] += 1
                            }
                        } catch {
                            lane.failed += 1
                            lane.failures[Self.label(error), default: 0] += 1
                        }
                        lane.slowest = max(lane.slowest, (ContinuousClock.now - sent).seconds)
                    }
                    return lane
                }
            }
            var total = Result()
            for await lane in group {
                total.answered += lane.answered
                total.failed += lane.failed
                total.failures.merge(lane.failures, uniquingKeysWith: +)
                total.slowest = max(total.slowest, lane.slowest)
            }
            return total
        }
        var result = total
        result.seconds = (ContinuousClock.now - started).seconds
        return result
    }
}

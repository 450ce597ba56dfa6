import Foundation
import HTTP
import Observability
import Settlement
import Synchronization
import XCTest

/// ALERT_WEBHOOK_URL: alerts POSTed as JSON, retried while the receiver fails.
final class AlertWebhookTests: XCTestCase {
    func testAlertsArePostedAndRetried() async throws {
        let received = Mutex<[[UInt8]]>([])
        let calls = Atomic<Int>(0)
        var router = HTTPRouter()
        router.post("/hook") { request, _ in
            // The first delivery fails: the webhook must retry it.
            if calls.add(1, ordering: .relaxed).newValue == 1 { return HTTPResponse.error(status: 503, "busy") }
            received.withLock { $0.append(request.body) }
            return HTTPResponse.json(status: 200, Array("{}".utf8))
        }
        let server = HTTPServer(configuration: HTTPServerConfiguration(), router: router)
        let port = try server.start()
        let logs = CapturingLogSink()
        let webhook = AlertWebhook(url: URL(string: "http://127.0.0.1:\(port)/hook")!, transport: try SocketHTTPTransport(),
                                   logger: Logger(sink: logs))
        let delivering = Task { await webhook.run() }
        let recorder = AlertRecorder(logger: Logger(sink: logs), metrics: SettlementMetrics(registry: MetricsRegistry()), webhook: webhook)
        recorder.announce(NewAlert(kind: .paidNotCredited, transactionID: "t-hook", jobID: 7, userID: "u", productID: "coins",
                                   reason: "no_open_order"), id: 11, repeated: false)
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline, received.withLock({ $0.isEmpty }) { try await Task.sleep(for: .milliseconds(50)) }
        let body = try XCTUnwrap(received.withLock { $0.first })
        let first = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        XCTAssertEqual(first["kind"] as? String, "paid_not_credited")
        XCTAssertEqual(first["alert_id"] as? Int, 11)
        XCTAssertEqual(first["announcement_key"] as? String, "paid_not_credited:t-hook")
        XCTAssertEqual(first["transaction_id"] as? String, "t-hook")
        XCTAssertEqual(first["repeat"] as? Bool, false)
        XCTAssertEqual(calls.load(ordering: .relaxed), 2, "one failure, one retry")
        XCTAssertTrue(logs.lines.contains { $0.contains("level=error event=paid_not_credited") && $0.contains("announcement_key=paid_not_credited:t-hook") })
        delivering.cancel()
        await server.shutdown(grace: .seconds(1))
    }
}

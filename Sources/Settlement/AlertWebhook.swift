import Foundation
import HTTP
import Observability
import Synchronization

/// Optional ALERT_WEBHOOK_URL delivery: alerts are queued in memory and POSTed as JSON
/// by a background task with retries and backoff, so a slow or dead receiver never holds
/// up a job. Open alerts are re-emitted by the leader, so a lost delivery is repeated.
public final class AlertWebhook: Sendable {
    private struct Delivery: Sendable {
        let body: [UInt8]
        let kind: String
    }

    private let url: URL
    private let transport: HTTPTransport
    private let logger: Logger
    private let queue = Mutex<[Delivery]>([])
    private let wake: AsyncStream<Void>.Continuation
    private let wakeStream: AsyncStream<Void>
    private static let capacity = 10_000

    public init(url: URL, transport: HTTPTransport, logger: Logger) {
        self.url = url
        self.transport = transport
        self.logger = logger
        (wakeStream, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    func send(_ alert: NewAlert, id: Int, repeated: Bool) {
        var object: [String: Any] = ["alert_id": id, "announcement_key": alert.announcementKey, "kind": alert.kind.rawValue,
                                     "reason": alert.reason, "repeat": repeated]
        if let jobID = alert.jobID { object["job_id"] = jobID }
        for (key, value) in [("user_id", alert.userID), ("order_id", alert.orderID), ("product_id", alert.productID),
                             ("transaction_id", alert.transactionID)] {
            if let value { object[key] = value }
        }
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return }
        let dropped = queue.withLock { pending -> Bool in
            pending.append(Delivery(body: Array(data), kind: alert.kind.rawValue))
            guard pending.count > Self.capacity else { return false }
            pending.removeFirst()
            return true
        }
        if dropped { logger.warning("alert_webhook_overflow", ["capacity": .int(Self.capacity)]) }
        wake.yield()
    }

    /// Delivers until cancelled.
    public func run() async {
        var wakeups = wakeStream.makeAsyncIterator()
        while !Task.isCancelled {
            guard let next = queue.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else {
                _ = await wakeups.next()
                continue
            }
            await deliver(next)
        }
    }

    private func deliver(_ delivery: Delivery) async {
        var backoff = 1.0
        for attempt in 1...6 {
            let request = HTTPClientRequest(method: "POST", url: url, headers: [("Content-Type", "application/json")], body: delivery.body)
            if let response = try? await transport.send(request, timeout: .seconds(10)), (200..<300).contains(response.status) {
                return
            }
            if Task.isCancelled || attempt == 6 { break }
            try? await Task.sleep(for: .seconds(backoff))
            backoff = min(backoff * 2, 60)
        }
        // The URL may carry a token: never logged.
        logger.warning("alert_webhook_failed", ["kind": .string(delivery.kind)])
    }
}

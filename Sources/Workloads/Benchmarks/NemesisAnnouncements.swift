import Foundation
import HTTP
import Synchronization

/// One announcement as a receiver saw it: a worker's log line or a webhook call.
struct NemesisAnnouncement: Sendable, Equatable {
    enum Stream: String, Sendable, CaseIterable {
        /// `job_finished` lines: every finished job, credits included.
        case jobFinished = "job_finished"
        /// Alert lines (the event is the alert kind).
        case alertLine = "alert_line"
        /// Webhook calls.
        case webhook
        /// `credit_revoked` lines: refunds.
        case creditRevoked = "credit_revoked"
        /// `credited_by_support` lines.
        case creditedBySupport = "credited_by_support"
    }

    let stream: Stream
    /// `announcement_key`; nil when the line or body carries none.
    let key: String?
    let repeated: Bool
    /// When it was written (a log line's `ts`) or received (a webhook call), seconds since 1970.
    let at: Double
    /// The worker whose log file holds the line (nil for a webhook call).
    let worker: Int?
}

/// The alert webhook's receiver: a loopback HTTP server the workers' `ALERT_WEBHOOK_URL`
/// points at. It records every call and answers 204.
final class NemesisWebhookReceiver: Sendable {
    private final class Calls: Sendable {
        let received = Mutex<[NemesisAnnouncement]>([])
        let malformed = Mutex(0)
    }

    private let server: HTTPServer
    private let calls = Calls()

    init() throws {
        let calls = self.calls
        server = HTTPServer(configuration: HTTPServerConfiguration()) { request in
            guard request.method == "POST", let body = NemesisLogReader.object(request.body) else {
                calls.malformed.withLock { $0 += 1 }
                return HTTPResponse(status: 400)
            }
            let announcement = NemesisAnnouncement(stream: .webhook, key: body["announcement_key"] as? String,
                                                   repeated: NemesisLogReader.isTrue(body["repeat"]),
                                                   at: Date().timeIntervalSince1970, worker: nil)
            calls.received.withLock { $0.append(announcement) }
            return HTTPResponse(status: 204)
        }
        try server.start()
    }

    var url: String { "http://127.0.0.1:\(server.port)/alerts" }
    var received: [NemesisAnnouncement] { calls.received.withLock { $0 } }
    /// Calls that were not a JSON object POSTed (each one is a failure of the run).
    var malformedCalls: Int { calls.malformed.withLock { $0 } }

    /// Returns once no call arrived for `quiet`, or after `limit`: deliveries still queued in a
    /// worker are lost when it stops.
    func waitUntilQuiet(_ quiet: Duration = .seconds(2), limit: Duration = .seconds(30)) async {
        let deadline = ContinuousClock.now + limit
        var count = -1
        while ContinuousClock.now < deadline {
            let now = calls.received.withLock { $0.count }
            if now == count { return }
            count = now
            try? await Task.sleep(for: quiet)
        }
    }

    func stop() async { await server.shutdown(grace: .seconds(1)) }
}

/// Reads the workers' log files (`LOG_FORMAT=json`, one file per worker slot, kept across
/// restarts) into announcements.
enum NemesisLogReader {
    /// The log lines that announce something, by event.
    static func stream(ofEvent event: String) -> NemesisAnnouncement.Stream? {
        switch event {
        case "job_finished": .jobFinished
        case "credit_revoked": .creditRevoked
        case "credited_by_support": .creditedBySupport
        case let kind where NemesisExpectation.alertKinds.contains(kind): .alertLine
        default: nil
        }
    }

    static func announcements(inDirectory directory: String) -> [NemesisAnnouncement] {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return files.sorted().flatMap { file -> [NemesisAnnouncement] in
            // work-N.log: N is the worker slot.
            guard file.hasPrefix("work-"), file.hasSuffix(".log"), let worker = Int(file.dropFirst(5).dropLast(4)),
                  let data = FileManager.default.contents(atPath: "\(directory)/\(file)") else { return [] }
            return announcements(inLog: data, worker: worker)
        }
    }

    static func announcements(inLog data: Data, worker: Int) -> [NemesisAnnouncement] {
        let timestamps = ISO8601DateFormatter()
        timestamps.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return data.split(separator: UInt8(ascii: "\n")).compactMap { line -> NemesisAnnouncement? in
            // Only JSON lines: a crash report on stderr lands in the same file.
            guard line.first == UInt8(ascii: "{"), let object = object(Array(line)), let event = object["event"] as? String,
                  let stream = stream(ofEvent: event) else { return nil }
            let at = (object["ts"] as? String).flatMap { timestamps.date(from: $0) }?.timeIntervalSince1970 ?? 0
            return NemesisAnnouncement(stream: stream, key: object["announcement_key"] as? String, repeated: isTrue(object["repeat"]),
                                       at: at, worker: worker)
        }
    }

    static func object(_ bytes: [UInt8]) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any]
    }

    static func isTrue(_ value: Any?) -> Bool {
        switch value {
        case let flag as Bool: flag
        case let text as String: text == "true"
        default: false
        }
    }
}

/// What must have been announced, read from the database once the queue drained: one key per
/// finished job, per alert, per revoked credit and per support credit, with the time its row
/// was written (to set against the faults).
struct NemesisExpectation: Sendable {
    static let alertKinds: Set<String> = ["paid_not_credited", "receipt_replay", "stuck_verification", "config_error",
                                          "consumption_failed", "reconciliation_gap"]

    struct Row: Sendable, Equatable {
        let key: String
        /// When the row was written (the job's `finished_at`, the alert's `first_seen_at`, …).
        let at: Double
    }

    var rows: [NemesisAnnouncement.Stream: [Row]] = [:]

    /// `job_finished`: `<outcome>:<transaction ids sorted, comma-joined>`, or `<outcome>:job:<id>` without any.
    static func jobKey(outcome: String, transactionIDs: [String], jobID: Int) -> String {
        transactionIDs.isEmpty ? "\(outcome):job:\(jobID)" : "\(outcome):\(transactionIDs.sorted().joined(separator: ","))"
    }

    /// An alert: `<kind>:<transaction_id>`, `<kind>:job:<job_id>`, or `reconciliation_gap:<product_id>:<day>`.
    static func alertKey(kind: String, transactionID: String?, jobID: Int?, productID: String?, day: String?) -> String {
        if kind == "reconciliation_gap" { return "\(kind):\(productID ?? ""):\(day ?? "")" }
        if let transactionID { return "\(kind):\(transactionID)" }
        return "\(kind):job:\(jobID.map(String.init) ?? "")"
    }
}

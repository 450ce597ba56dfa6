import AppStore
import Foundation
import HTTP
import Synchronization

/// The simulator's request handling and mutable state. Every lock is taken and released
/// synchronously; nothing is held across a suspension (latency sleeps, hangs).
final class SimEngine: Sendable {
    private struct State {
        var faults: AppleSimFaults
        var outageWindow: Range<ContinuousClock.Instant>?
        var random: SimRandom
        var stats = AppleSimStats()
    }

    private enum Plan {
        case outage
        case proceed(fault: SimFault?, latency: Duration)
    }

    let sharedSecret: String?
    private let hangLimit: Duration
    let hangs = HangRelease()
    private let state: Mutex<State>
    /// Where answered purchases go, for the sales report.
    private let salesBook: SimSalesBook

    init(configuration: AppleSimConfiguration, salesBook: SimSalesBook = SimSalesBook()) {
        self.salesBook = salesBook
        sharedSecret = configuration.sharedSecret
        hangLimit = configuration.hangLimit
        state = Mutex(State(faults: configuration.faults, random: SimRandom(seed: configuration.seed)))
    }

    // MARK: verifyReceipt

    func verify(_ request: HTTPRequest, endpoint: SimVerifyResponder.Endpoint) async -> HTTPResponse {
        let arrival = ContinuousClock.now
        guard case .proceed(let fault, let latency) = state.withLock({ plan(&$0, endpoint: endpoint, arrival: arrival) }) else {
            return Self.outageResponse
        }
        // The answer is worked out on arrival and sent `latency` after arrival: a wave of
        // requests whose sleeps end together must not also queue behind each other's JSON work.
        // Only the answers that are sent (or sent cut short) are worked out.
        let answer = fault == nil || fault == .malformed
            ? SimVerifyResponder.answer(request.body, endpoint: endpoint, sharedSecret: sharedSecret) : nil
        if latency > .zero { try? await Task.sleep(until: arrival + latency, clock: .continuous) }
        if fault == .hang {
            record(endpoint, "hang")
            await hangs.hang(upTo: hangLimit)
            return Self.closeWithoutAnswer
        }
        return respond(fault, answer, request, endpoint: endpoint)
    }

    /// The response when it is due at once (no latency, no hang configured), worked out on the
    /// server's loop thread; nil when only `verify` can give it. Rolls the dice only when it answers,
    /// so a seed replays the same faults either way.
    func verifyAtOnce(_ request: HTTPRequest, endpoint: SimVerifyResponder.Endpoint) -> HTTPResponse? {
        let arrival = ContinuousClock.now
        let plan = state.withLock { s -> Plan? in
            guard s.faults.latency == nil, s.faults.hangRate == 0 else { return nil }
            return self.plan(&s, endpoint: endpoint, arrival: arrival)
        }
        switch plan {
        case nil: return nil
        case .outage: return Self.outageResponse
        case .proceed(let fault, _): return respond(fault, nil, request, endpoint: endpoint)
        }
    }

    private static let outageResponse = HTTPResponse.text(status: 503, "Service Unavailable (simulated outage)")

    /// Outage or not, and the request's fault and latency: always two rolls per request, so a
    /// seed replays the same faults and latencies.
    private func plan(_ s: inout State, endpoint: SimVerifyResponder.Endpoint, arrival: ContinuousClock.Instant) -> Plan {
        if let window = s.outageWindow, window.contains(arrival) {
            s.stats.record(endpoint: endpoint.rawValue, result: "outage")
            return .outage
        }
        let roll = s.random.unit(), spread = s.random.unit()
        let latency = s.faults.latency.map { l in
            l.min + .milliseconds(Int64(Double(SimDurations.milliseconds(l.max - l.min)) * spread))
        } ?? .zero
        return .proceed(fault: s.faults.fault(forRoll: roll), latency: latency)
    }

    /// What a request with `fault` (other than a hang) is sent, recorded in the stats; `answer` is
    /// the body's answer when already worked out.
    private func respond(_ fault: SimFault?, _ answer: SimVerifyResponder.Answer?, _ request: HTTPRequest,
                         endpoint: SimVerifyResponder.Endpoint) -> HTTPResponse {
        let result: String
        let response: HTTPResponse
        var answered: SimVerifyResponder.Answer?
        switch fault {
        case .hang, .reset:
            record(endpoint, fault == .hang ? "hang" : "reset")
            return Self.closeWithoutAnswer
        case .httpError(let status):
            (result, response) = ("http_\(status)", .text(status: status, "simulated server error"))
        case .malformed:
            let body = (answer ?? SimVerifyResponder.answer(request.body, endpoint: endpoint, sharedSecret: sharedSecret)).body
            (result, response) = ("malformed", .json(status: 200, Array(body.prefix(max(1, body.count / 2)))))
        case .status21005:
            (result, response) = ("status_21005", .json(status: 200, Array(#"{"status":21005}"#.utf8)))
        case .retryable(let hyphenated):
            let key = hyphenated ? "is-retryable" : "is_retryable"
            (result, response) = ("status_21199", .json(status: 200, Array(#"{"status":21199,"\#(key)":true}"#.utf8)))
        case nil:
            let answer = answer ?? SimVerifyResponder.answer(request.body, endpoint: endpoint, sharedSecret: sharedSecret)
            answered = answer
            (result, response) = (answer.status == 0 ? "ok" : "status_\(answer.status)", .json(status: 200, answer.body))
        }
        state.withLock { s in
            s.stats.record(endpoint: endpoint.rawValue, result: result)
            if let answered, answered.status == 0 { s.stats.recordAnswered(paid: answered.paid, revoked: answered.revoked) }
        }
        if let answered, answered.status == 0, answered.environment == .production { record(answered.sales) }
        return response
    }

    /// The HTTP server cannot drop a connection from a handler. The closest it offers: an interim
    /// `100 Continue` head with `Connection: close`, after which the server closes the socket.
    /// Clients skip interim heads, so they see the connection end with no final answer.
    static let closeWithoutAnswer = HTTPResponse(status: 100, headers: [("Connection", "close")])

    /// Production purchases answered as paid (or refunded) are what Apple's sales report counts.
    private func record(_ sales: [SimReceipt.Transaction]) {
        for t in sales {
            salesBook.record(transactionID: t.transactionID, productID: t.productID, quantity: t.quantity ?? 1,
                             purchaseDate: Date(timeIntervalSince1970: Double(t.purchaseDateMs ?? SimReceipt.nowMilliseconds()) / 1000),
                             refundDate: t.cancellationDateMs.map { Date(timeIntervalSince1970: Double($0) / 1000) })
        }
    }

    private func record(_ endpoint: SimVerifyResponder.Endpoint, _ result: String) {
        state.withLock { $0.stats.record(endpoint: endpoint.rawValue, result: result) }
    }

    // MARK: runtime control

    var faults: AppleSimFaults { state.withLock { $0.faults } }
    var stats: AppleSimStats { state.withLock { $0.stats } }

    /// Replaces the faults; a set `outage` starts counting from now.
    func setFaults(_ faults: AppleSimFaults, outageChanged: Bool = true) {
        let now = ContinuousClock.now
        state.withLock { s in
            s.faults = faults
            if outageChanged {
                s.outageWindow = faults.outage.map { (now + $0.start)..<(now + $0.start + $0.duration) }
            }
        }
    }

    func startOutage(for duration: Duration) {
        let now = ContinuousClock.now
        state.withLock { $0.outageWindow = now..<(now + duration) }
    }

    /// Current settings plus the live outage window, as `GET /sim/faults` shows them.
    var faultsJSON: [String: Any] {
        let now = ContinuousClock.now
        return state.withLock { s in
            var json = s.faults.settingsJSON
            json["outage"] = s.faults.outage.map { $0.description } ?? "off"
            let window = s.outageWindow.flatMap { $0.upperBound > now ? $0 : nil }
            json["outage_active"] = window?.contains(now) ?? false
            json["outage_starts_in_seconds"] = window.map { Self.seconds(max(.zero, now.duration(to: $0.lowerBound))) } ?? 0
            json["outage_remaining_seconds"] = window.map { Self.seconds(now.duration(to: $0.upperBound)) } ?? 0
            return json
        }
    }

    private static func seconds(_ d: Duration) -> Double { Double(SimDurations.milliseconds(d)) / 1000 }
}

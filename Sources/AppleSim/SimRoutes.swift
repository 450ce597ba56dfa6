import Foundation
import HTTP
import Observability

/// HTTP surface of the simulator: Apple's two endpoints plus the `/sim/*` controls.
enum SimRoutes {
    static func router(_ engine: SimEngine, logger: Logger?, serverAPI: SimServerAPI) -> HTTPRouter {
        var router = HTTPRouter()
        router.post("/verifyReceipt") { request, _ in await engine.verify(request, endpoint: .production) }
        router.post("/sandbox/verifyReceipt") { request, _ in await engine.verify(request, endpoint: .sandbox) }
        router.get("/sim/faults") { _, _ in json(engine.faultsJSON) }
        router.post("/sim/faults") { request, _ in updateFaults(engine, request.body, logger: logger) }
        router.post("/sim/outage") { request, _ in startOutage(engine, request.body, logger: logger) }
        router.get("/sim/stats") { _, _ in
            var stats = engine.stats.json
            stats["appstore_api"] = serverAPI.apiStatsJSON  // requests per second, for the fleet limit
            return json(stats)
        }
        router.get("/healthz") { _, _ in json(["status": "ok"]) }
        return router
    }

    /// verifyReceipt answered on the server's loop thread when nothing makes it wait (no latency,
    /// no hangs configured): at 0 latency a benchmark's workers send thousands a second, and a task
    /// per request would cost the simulator CPU on the cores the worker needs.
    static func immediate(_ engine: SimEngine) -> @Sendable (HTTPRequest) -> HTTPResponse? {
        return { request in
            guard request.method == "POST" else { return nil }
            let endpoint: SimVerifyResponder.Endpoint
            switch request.path {
            case "/verifyReceipt": endpoint = .production
            case "/sandbox/verifyReceipt": endpoint = .sandbox
            default: return nil
            }
            guard var response = engine.verifyAtOnce(request, endpoint: endpoint) else { return nil }
            response.route = request.path
            return response
        }
    }

    /// Body: any of the fault settings (flag names, "-" or "_"), values as strings or numbers,
    /// null/"off" to clear; `"clear": true` first resets everything. Unlisted settings keep their value.
    private static func updateFaults(_ engine: SimEngine, _ body: [UInt8], logger: Logger?) -> HTTPResponse {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] else {
            return .error(status: 400, "expected a JSON object of fault settings")
        }
        var faults = (object["clear"] as? Bool) == true ? AppleSimFaults() : engine.faults
        do {
            for (key, value) in object where key != "clear" {
                try faults.apply(key, text(value))
            }
            try faults.validate()
        } catch {
            return .error(status: 400, error.description)
        }
        let outageChanged = object.keys.contains { AppleSimFaults.canonicalName($0) == "outage" } || object["clear"] != nil
        engine.setFaults(faults, outageChanged: outageChanged)
        logger?.notice("apple_sim_faults_changed", ["faults": .string(describe(faults))])
        return json(engine.faultsJSON)
    }

    private static func startOutage(_ engine: SimEngine, _ body: [UInt8], logger: Logger?) -> HTTPResponse {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any],
              let seconds = Double(text(object["seconds"] ?? NSNull())), seconds.isFinite, seconds >= 0 else {
            return .error(status: 400, #"expected {"seconds": N} with N >= 0"#)
        }
        engine.startOutage(for: .milliseconds(Int64(seconds * 1000)))
        logger?.notice("apple_sim_outage", ["seconds": .double(seconds)])
        return json(engine.faultsJSON)
    }

    private static func text(_ value: Any) -> String {
        switch value {
        case let s as String: s
        case is NSNull: "off"
        case let n as NSNumber: n.stringValue
        default: "\(value)"
        }
    }

    static func describe(_ faults: AppleSimFaults) -> String {
        var parts = faults.latency.map { ["latency=\($0)"] } ?? []
        for (name, rate) in [("error", faults.errorRate), ("21005", faults.status21005Rate),
                             ("retryable", faults.retryableRate), ("hang", faults.hangRate),
                             ("reset", faults.resetRate), ("malformed", faults.malformedRate)] where rate > 0 {
            parts.append("\(name)=\(rate)")
        }
        if let outage = faults.outage { parts.append("outage=\(outage)") }
        return parts.isEmpty ? "none" : parts.joined(separator: " ")
    }

    static func json(_ object: [String: Any]) -> HTTPResponse {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return .json(status: 200, data)
    }
}

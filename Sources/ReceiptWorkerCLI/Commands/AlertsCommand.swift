import Foundation
import Observability
import Postgres
import Settlement

enum AlertsCommand {
    static let spec = CommandSpec(
        name: "alerts",
        summary: "For support: alerts list [--open] [--json] | alerts credit ID --order ORDER_ID | alerts resolve ID --note TEXT [--actor NAME]",
        usage: "alerts list [--open] [--json] | alerts credit ID --order ORDER_ID [--actor NAME] | alerts resolve ID --note TEXT [--no-credit] [--actor NAME]",
        settings: Settings.database + Settings.logging,
        flags: [
            CommandFlag(name: "open", takesValue: false, help: "list: only open alerts"),
            CommandFlag(name: "json", takesValue: false, help: "list: one JSON array"),
            CommandFlag(name: "order", takesValue: true, help: "credit: the order to credit the payment to"),
            CommandFlag(name: "note", takesValue: true, help: "resolve: what was done (kept with the alert)"),
            CommandFlag(name: "no-credit", takesValue: false,
                        help: "resolve: close a paid_not_credited alert without crediting (the buyer is owed nothing)"),
            CommandFlag(name: "actor", takesValue: true,
                        help: "credit, resolve: who acts, named by the ledger row and the audit log (default: the operating system user)"),
        ],
        positionals: 1...2,
        actions: ["list", "credit", "resolve"])

    static func run(_ runtime: Runtime) async throws -> Int32 {
        let options = runtime.options
        let action = options.positionals[0]
        func alertID() throws -> Int {
            guard options.positionals.count == 2, let id = Int(options.positionals[1]), id > 0 else {
                throw UsageError("alerts \(action) needs an alert id (usage: receipt-worker \(spec.usage))")
            }
            return id
        }
        switch action {
        case "list":
            guard options.positionals.count == 1 else { throw UsageError("alerts list takes no id") }
        case "credit":
            _ = try alertID()
            guard let order = options.flag("order"), !order.isEmpty else { throw UsageError("alerts credit needs --order ORDER_ID") }
        case "resolve":
            _ = try alertID()
            guard let note = options.flag("note"), !note.isEmpty else { throw UsageError("alerts resolve needs --note TEXT") }
        default:
            throw UsageError("unknown alerts action '\(action)' (\(spec.actions.joined(separator: ", ")))")
        }
        let client = try await runtime.connectDatabase(maxConnections: 1, applicationName: "receipt-worker-alerts")
        let desk = SupportDesk(client: client, metrics: SettlementMetrics(registry: MetricsRegistry()), logger: runtime.logger)
        // Each change commits with its iap.audit_log row, as from the console.
        let audit = AuditLog(client: client, logger: runtime.logger)
        let actor = options.flag("actor") ?? NSUserName()
        do {
            switch action {
            case "list":
                let alerts = try await desk.list(openOnly: options.has("open"))
                Console.print(options.has("json") ? AlertListing.json(alerts) : AlertListing.table(alerts))
            case "credit":
                let id = try alertID(), order = options.flag("order")!
                @Sendable func details(_ result: ManualCreditResult) -> [String: String] {
                    ["order_id": order, "result": result == .credited ? "credited" : "already_credited", "via": "cli"]
                }
                let result = try await desk.credit(alertID: id, orderID: order, actor: actor) { connection, result in
                    try await audit.insert(on: connection, actor: actor, action: "credit", target: "alert:\(id)", details: details(result))
                }
                audit.logLine(actor: actor, action: "credit", target: "alert:\(id)", details: details(result))
                switch result {
                case .credited: Console.print("alert \(id): credited to order \(order) and resolved")
                case .alreadyCredited(let order): Console.print("alert \(id): the payment was already credited to order \(order); alert resolved, nothing doubled")
                }
            default:
                let id = try alertID(), note = options.flag("note")!
                let details = options.has("no-credit") ? ["note": note, "via": "cli", "confirm_no_credit": "yes"] : ["note": note, "via": "cli"]
                try await desk.resolve(alertID: id, note: "\(note) (by \(actor))", confirmedNoCredit: options.has("no-credit")) { connection, _ in
                    try await audit.insert(on: connection, actor: actor, action: "resolve", target: "alert:\(id)", details: details)
                }
                audit.logLine(actor: actor, action: "resolve", target: "alert:\(id)", details: details)
                Console.print("alert \(id): resolved")
            }
        } catch let error as SupportError {
            await client.close()
            throw UsageError(error.description)
        }
        await client.close()
        return 0
    }
}

/// How alerts print for people and for scripts.
enum AlertListing {
    static func table(_ alerts: [AlertRecord]) -> String {
        guard !alerts.isEmpty else { return "no alerts" }
        let header = ["id", "kind", "state", "user", "order", "product", "transaction", "reason", "first seen"]
        let rows = alerts.map { alert in
            [String(alert.id), alert.kind, alert.state, alert.userID ?? "-", alert.orderID ?? "-", alert.productID ?? "-",
             alert.transactionID ?? "-", alert.reason, Console.timestamp(alert.firstSeenAt)]
        }
        return TextTable.render(header: header, rows: rows)
    }

    static func json(_ alerts: [AlertRecord]) -> String {
        let objects: [[String: Any]] = alerts.map { alert in
            var object: [String: Any] = ["id": alert.id, "kind": alert.kind, "state": alert.state, "reason": alert.reason,
                                         "first_seen_at": Console.timestamp(alert.firstSeenAt)]
            object["details"] = (try? JSONSerialization.jsonObject(with: Data(alert.detailsJSON.utf8))) ?? [:]
            for (key, value) in [("transaction_id", alert.transactionID), ("user_id", alert.userID), ("order_id", alert.orderID),
                                 ("product_id", alert.productID), ("resolution", alert.resolution)] {
                if let value { object[key] = value }
            }
            if let job = alert.jobID { object["job_id"] = job }
            if let resolved = alert.resolvedAt { object["resolved_at"] = Console.timestamp(resolved) }
            return object
        }
        let data = (try? JSONSerialization.data(withJSONObject: objects, options: [.sortedKeys])) ?? Data("[]".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}

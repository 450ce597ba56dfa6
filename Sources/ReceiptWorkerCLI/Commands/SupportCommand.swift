import Foundation
import Observability
import Settlement

/// `support lookup-order APPLE_ORDER_ID [--user U --order O [--transaction T]]`.
enum SupportCommand {
    static let spec = CommandSpec(
        name: "support",
        summary: "support lookup-order APPLE_ORDER_ID [--user U --order O]: Apple's order id → its transactions, verified, with our ledger; credits on request.",
        usage: "support lookup-order APPLE_ORDER_ID [--user USER_ID --order ORDER_ID [--transaction TRANSACTION_ID]]",
        settings: AppStoreAccess.settings,
        flags: [
            CommandFlag(name: "user", takesValue: true, help: "credit: the buyer (our user id)"),
            CommandFlag(name: "order", takesValue: true, help: "credit: the buyer's open order to credit"),
            CommandFlag(name: "transaction", takesValue: true, help: "credit: which transaction, when the Apple order has several"),
            CommandFlag(name: "actor", takesValue: true, help: "who looks up and credits (audit log, ledger row; default: the operating system user)"),
        ],
        positionals: 2...2,
        actions: ["lookup-order"])

    static func run(_ runtime: Runtime) async throws -> Int32 {
        let options = runtime.options
        guard options.positionals[0] == "lookup-order" else {
            throw UsageError("unknown support action '\(options.positionals[0])' (\(spec.actions.joined(separator: ", ")))")
        }
        let appleOrderID = options.positionals[1]
        let user = options.flag("user"), order = options.flag("order")
        guard (user == nil) == (order == nil) else { throw UsageError("support lookup-order credits with both --user and --order, or neither") }
        let actor = options.flag("actor") ?? NSUserName()
        return try await AppStoreAccess.with(runtime, applicationName: "receipt-worker-support") { access in
            let desk = OrderLookupDesk(client: access.client, api: access.api, signedData: access.signedData, metrics: access.metrics,
                                       logger: runtime.logger)
            // Found or failed, each lookup is kept (the console's find box answers the id later) and audited.
            let audit = AuditLog(client: access.client, logger: runtime.logger)
            let lookups = OrderLookupLog(client: access.client, audit: audit)
            let found: OrderLookupResult
            do {
                found = try await desk.lookUp(appleOrderID: appleOrderID)
            } catch let failure as OrderLookupError {
                try await lookups.failed(appleOrderID: appleOrderID, reason: failure.description, actor: actor)
                throw failure
            }
            try await lookups.found(appleOrderID: appleOrderID, transactionIDs: found.transactions.map(\.transactionID),
                                    userID: OrderLookupLog.knownUser(found.transactions.map(\.creditedUserID)), actor: actor)
            Console.print(table(found))
            guard let user, let order else { return 0 }
            let chosen = options.flag("transaction")
            let candidates = found.transactions.filter { !$0.refundedByApple && (chosen == nil || $0.transactionID == chosen) }
            guard candidates.count == 1, let transaction = candidates.first else {
                throw UsageError(candidates.isEmpty ? "no creditable transaction in Apple order \(appleOrderID)"
                                                    : "Apple order \(appleOrderID) has several transactions: pass --transaction ID")
            }
            let target = "transaction:\(transaction.transactionID)"
            @Sendable func details(_ result: OrderCreditResult) -> [String: String] {
                let word = if case .credited = result { "credited" } else { "already_credited" }
                return ["apple_order_id": appleOrderID, "user_id": user, "order_id": order, "result": word, "via": "cli"]
            }
            do {
                let result = try await desk.credit(appleOrderID: appleOrderID, transactionID: transaction.transactionID, userID: user,
                                                   orderID: order, actor: actor) { connection, result in
                    try await audit.insert(on: connection, actor: actor, action: "lookup_credit", target: target, details: details(result))
                }
                audit.logLine(actor: actor, action: "lookup_credit", target: target, details: details(result))
                switch result {
                case .credited(let orderID): Console.print("transaction \(transaction.transactionID): credited to order \(orderID)")
                case .alreadyCredited(let orderID):
                    Console.print("transaction \(transaction.transactionID): already credited to order \(orderID); nothing changed")
                }
            } catch let error as SupportError {
                throw UsageError(error.description)
            }
            return 0
        }
    }

    static func table(_ result: OrderLookupResult) -> String {
        let rows = result.transactions.map { t -> [String] in
            let ledger: String = switch t.ledger {
            case .notCredited: t.refundedByApple ? "refunded by Apple" : "not credited"
            case .credited(let user, let order, let revoked): "credited to user \(user) order \(order)\(revoked ? " (revoked)" : "")"
            }
            return [t.transactionID, t.productID, String(t.quantity), t.purchaseDate.map(Console.timestamp) ?? "-", t.environment, ledger]
        }
        return "Apple order \(result.appleOrderID): \(rows.count) transaction(s)\n"
            + TextTable.render(header: ["transaction", "product", "qty", "purchased", "environment", "ledger"], rows: rows)
    }
}

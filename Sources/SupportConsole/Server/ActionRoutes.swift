import Foundation
import HTTP
import Settlement

extension ConsoleApp {
    func addActions(to router: inout HTTPRouter) {
        router.post("/alerts/{id}/credit", action { request, params, user, form in
            let id = try alertID(params)
            let orderID = try form.required("order_id", label: "The order id", maxLength: 200)
            do {
                // The same exactly-once ledger write as `alerts credit`; the audit row commits with it.
                let result = try await desk.credit(alertID: id, orderID: orderID, actor: user.name) { connection, result in
                    try await audit.insert(on: connection, actor: user.name, action: "credit", target: "alert:\(id)",
                                           details: ["order_id": orderID, "result": Self.creditOutcome(result)])
                }
                let outcome = Self.creditOutcome(result)
                audit.logLine(actor: user.name, action: "credit", target: "alert:\(id)", details: ["order_id": orderID, "result": outcome])
                return Responses.redirect("/alerts" + FormFields.query(["notice": outcome, "alert": String(id)]))
            } catch let refusal as SupportError {
                try await audit.record(actor: user.name, action: "credit", target: "alert:\(id)",
                                       details: ["order_id": orderID, "result": "refused", "reason": refusal.description])
                throw BadRequest("Not credited: \(refusal.description).", status: refusal == .alertNotFound(id) ? 404 : 409)
            }
        })
        router.post("/alerts/{id}/resolve", action { _, params, user, form in
            let id = try alertID(params)
            let note = try form.required("note", label: "A note", maxLength: 2000)
            do {
                try await desk.resolve(alertID: id, note: "\(note) (by \(user.name))") { connection, _ in
                    try await audit.insert(on: connection, actor: user.name, action: "resolve", target: "alert:\(id)", details: ["note": note])
                }
            } catch let refusal as SupportError {
                throw BadRequest("Not resolved: \(refusal.description).", status: refusal == .alertNotFound(id) ? 404 : 409)
            }
            audit.logLine(actor: user.name, action: "resolve", target: "alert:\(id)", details: ["note": note])
            return Responses.redirect("/alerts" + FormFields.query(["notice": "resolved", "alert": String(id)]))
        })
        router.post("/lookup", action { _, _, user, form in
            let lookup = try requireLookup()
            let appleOrderID = try appleOrderIDField(form)
            let transactions = try await lookup.lookUp(appleOrderID: appleOrderID)
            try await audit.record(actor: user.name, action: "lookup", target: "apple_order:\(appleOrderID)",
                                   details: ["transactions": String(transactions.count)])
            return Responses.html(LookupPage(available: true, appleOrderID: appleOrderID, transactions: transactions, notice: nil).render(user))
        })
        router.post("/lookup/credit", action { _, _, user, form in
            let lookup = try requireLookup()
            let appleOrderID = try appleOrderIDField(form)
            let transactionID = try form.required("transaction_id", label: "The transaction id", maxLength: 64)
            let userID = try form.required("user_id", label: "The user id", maxLength: 500)
            let orderID = try form.required("order_id", label: "The order id", maxLength: 200)
            let target = "transaction:\(transactionID)"
            let details = ["apple_order_id": appleOrderID, "user_id": userID, "order_id": orderID]
            let result = try await lookup.credit(appleOrderID: appleOrderID, transactionID: transactionID, userID: userID,
                                                 orderID: orderID, actor: user.name) { connection, result in
                try await audit.insert(on: connection, actor: user.name, action: "lookup_credit", target: target,
                                       details: details.merging(["result": result]) { $1 })
            }
            audit.logLine(actor: user.name, action: "lookup_credit", target: target, details: details.merging(["result": result]) { $1 })
            let transactions = try await lookup.lookUp(appleOrderID: appleOrderID)
            return Responses.html(LookupPage(available: true, appleOrderID: appleOrderID, transactions: transactions,
                                             notice: (result, "ok")).render(user))
        })
    }

    private static func creditOutcome(_ result: ManualCreditResult) -> String {
        result == .credited ? "credited" : "already_credited"
    }

    private func alertID(_ params: [String: String]) throws -> Int {
        guard let id = params["id"].flatMap({ Int($0) }), id > 0 else { throw BadRequest("An alert id is a positive whole number.") }
        return id
    }

    private func requireLookup() throws -> any AppleOrderLookup {
        guard let lookup else { throw BadRequest("Apple order lookup is unavailable on this console.", status: 503) }
        return lookup
    }

    /// Apple order ids are short letters and digits (e.g. MK5TTTVWJH).
    private func appleOrderIDField(_ form: FormFields) throws -> String {
        let id = try form.required("apple_order_id", label: "The Apple order id", maxLength: 64)
        guard id.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)) }) else {
            throw BadRequest("An Apple order id holds only letters and digits.")
        }
        return id
    }
}

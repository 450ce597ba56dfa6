import Foundation
import HTTP
import Settlement

extension ConsoleApp {
    /// Every form answers with a redirect (post/redirect/get): Back and reload never resubmit, and
    /// the outcome or the refusal is shown inline on the page the form came from, input kept.
    func addActions(to router: inout HTTPRouter) {
        router.post("/alerts/{id}/credit", action { request, params, user, form in
            let id = try alertID(params)
            return try await answer(form, user: user, back: "/alerts", alertID: id, typed: ["order_id", "order_choice"]) {
                // A typed order id wins over the list of open orders (it is the fallback for one not listed).
                let orderID = form.text("order_id") == nil && form.text("order_choice") != nil
                    ? try form.required("order_choice", label: "The order", maxLength: 200)
                    : try form.required("order_id", label: "The order id", maxLength: 200)
                do {
                    // The same exactly-once ledger write as `alerts credit`; the audit row commits with it.
                    let result = try await desk.credit(alertID: id, orderID: orderID, actor: user.name) { connection, result in
                        try await audit.insert(on: connection, actor: user.name, action: "credit", target: "alert:\(id)",
                                               details: ["order_id": orderID, "result": Self.creditOutcome(result)])
                    }
                    audit.logLine(actor: user.name, action: "credit", target: "alert:\(id)",
                                  details: ["order_id": orderID, "result": Self.creditOutcome(result)])
                    return result == .credited
                        ? Flash(message: "Alert #\(id): credited to order \(orderID) and resolved.", tone: "ok", alertID: id)
                        : Flash(message: "Alert #\(id): the payment was already in the ledger; resolved, nothing doubled.", tone: "ok", alertID: id)
                } catch let refusal as SupportError {
                    try await audit.record(actor: user.name, action: "credit", target: "alert:\(id)",
                                           details: ["order_id": orderID, "result": "refused", "reason": refusal.description])
                    throw ActionRefusal(refusal, alertID: id, verb: "Not credited")
                }
            }
        })
        router.post("/alerts/{id}/resolve", action { _, params, user, form in
            let id = try alertID(params)
            return try await answer(form, user: user, back: "/alerts", alertID: id, typed: ["note"]) {
                let note = try form.required("note", label: "A note", maxLength: 2000)
                let noCredit = form.text("confirm_no_credit") == "yes"
                // The decision not to credit is part of the record.
                let details = noCredit ? ["note": note, "confirm_no_credit": "yes"] : ["note": note]
                do {
                    // The checkbox is `required` in the browser too; this is the check that counts.
                    try await desk.resolve(alertID: id, note: "\(note) (by \(user.name))", confirmedNoCredit: noCredit) { connection, _ in
                        try await audit.insert(on: connection, actor: user.name, action: "resolve", target: "alert:\(id)", details: details)
                    }
                } catch let refusal as SupportError {
                    throw ActionRefusal(refusal, alertID: id, verb: "Not resolved")
                }
                audit.logLine(actor: user.name, action: "resolve", target: "alert:\(id)", details: details)
                return Flash(message: "Alert #\(id): resolved.", tone: "ok", alertID: id)
            }
        })
        router.post("/lookup", action { _, _, user, form in
            try await answer(form, user: user, back: "/lookup", typed: ["apple_order_id"]) {
                let lookup = try requireLookup()
                let appleOrderID = try appleOrderIDField(form)
                let transactions: [LookedUpTransaction]
                do {
                    transactions = try await lookup.lookUp(appleOrderID: appleOrderID)
                } catch let failure as OrderLookupError {
                    // Failed lookups are kept and audited too: who asked Apple about which order, and what came back.
                    try await lookups.failed(appleOrderID: appleOrderID, reason: failure.description, actor: user.name)
                    throw ActionRefusal(failure)
                }
                // Kept so the find box answers this Apple order id from now on.
                try await lookups.found(appleOrderID: appleOrderID, transactionIDs: transactions.map(\.transactionID),
                                        userID: OrderLookupLog.knownUser(transactions.map(\.creditedUserID)), actor: user.name)
                return Flash(message: "Apple returned \(transactions.count) transaction(s) for \(appleOrderID).", tone: "ok",
                             fields: ["apple_order_id": appleOrderID], lookup: LookupShown(appleOrderID: appleOrderID, transactions: transactions))
            }
        })
        router.post("/lookup/credit", action { _, _, user, form in
            try await answer(form, user: user, back: "/lookup", typed: ["apple_order_id", "user_id", "order_id", "transaction_id"]) {
                try await creditFromLookup(form, user: user)
            }
        })
    }

    /// A transaction from an Apple order lookup credited to a buyer's order: the same exactly-once
    /// ledger write, refusals and audit as an alert's credit. Done or refused, the lookup's result
    /// comes back with the outcome beside the transaction's row.
    private func creditFromLookup(_ form: FormFields, user: ConsoleUser) async throws -> Flash {
        let lookup = try requireLookup()
        let appleOrderID = try appleOrderIDField(form)
        let transactionID = try form.required("transaction_id", label: "The transaction id", maxLength: 64)
        let userID = try form.required("user_id", label: "The user id", maxLength: 500)
        let orderID = try form.required("order_id", label: "The order id", maxLength: 200)
        let target = "transaction:\(transactionID)"
        let details = ["apple_order_id": appleOrderID, "user_id": userID, "order_id": orderID]
        let refusal: ActionRefusal
        do {
            let result = try await lookup.credit(appleOrderID: appleOrderID, transactionID: transactionID, userID: userID,
                                                 orderID: orderID, actor: user.name) { connection, result in
                try await audit.insert(on: connection, actor: user.name, action: "lookup_credit", target: target,
                                       details: details.merging(["result": result]) { $1 })
            }
            audit.logLine(actor: user.name, action: "lookup_credit", target: target, details: details.merging(["result": result]) { $1 })
            return Flash(message: "Transaction \(transactionID) of Apple order \(appleOrderID), for user \(userID): \(result).", tone: "ok",
                         fields: ["apple_order_id": appleOrderID, "transaction_id": transactionID],
                         lookup: try await shownAgain(appleOrderID, lookup))
        } catch let failure as OrderLookupError {
            refusal = ActionRefusal(failure)
        } catch let failure as SupportError {
            // A mistyped order, or another buyer's: the ledger's rules, said in support's words.
            refusal = ActionRefusal(failure, alertID: nil, verb: "Not credited")
        }
        try await audit.record(actor: user.name, action: "lookup_credit", target: target,
                               details: details.merging(["result": "refused", "reason": refusal.message]) { $1 })
        var flash = Flash(message: refusal.message, tone: "bad", lookup: try? await shownAgain(appleOrderID, lookup))
        flash.fields = ["apple_order_id": appleOrderID, "transaction_id": transactionID, "user_id": userID, "order_id": orderID]
        return flash
    }

    /// The lookup's result as it stands now (Apple asked again: the ledger column may have changed).
    private func shownAgain(_ appleOrderID: String, _ lookup: any AppleOrderLookup) async throws -> LookupShown {
        LookupShown(appleOrderID: appleOrderID, transactions: try await lookup.lookUp(appleOrderID: appleOrderID))
    }

    /// Runs a form's work and redirects back to where the form was (its `return_to` field, a path
    /// on this console) with the outcome, or with the refusal in the right words and the fields as
    /// typed. Only a failure the person cannot act on (the database) still answers with an error page.
    private func answer(_ form: FormFields, user: ConsoleUser, back fallback: String, alertID: Int? = nil, typed: [String],
                        _ work: () async throws -> Flash) async throws -> HTTPResponse {
        let back = ReturnPath.from(form.text("return_to"), default: fallback)
        var flash: Flash
        do {
            flash = try await work()
        } catch let refusal as ActionRefusal {
            flash = Flash(message: refusal.message, tone: "bad", alertID: refusal.alertID ?? alertID)
            flash.fields = Dictionary(uniqueKeysWithValues: typed.compactMap { name in form.text(name).map { (name, $0) } })
        } catch let bad as BadRequest where bad.status != 403 {
            flash = Flash(message: bad.message, tone: "bad", alertID: alertID)
            flash.fields = Dictionary(uniqueKeysWithValues: typed.compactMap { name in form.text(name).map { (name, $0) } })
        }
        let token = try await flashes.put(flash, session: user.csrfToken)
        return Responses.redirect(ReturnPath.with(back, flash: token))
    }

    private static func creditOutcome(_ result: ManualCreditResult) -> String {
        result == .credited ? "credited" : "already_credited"
    }

    private func alertID(_ params: [String: String]) throws -> Int {
        guard let id = params["id"].flatMap({ Int($0) }), id > 0 else { throw BadRequest("An alert id is a positive whole number.") }
        return id
    }

    private func requireLookup() throws -> any AppleOrderLookup {
        guard let lookup else {
            throw ActionRefusal(message: "Apple order lookup is unavailable: this console has no App Store Server API credentials "
                                + "configured (APPLE_BUNDLE_ID and the APPSTORE_* settings). Ask an operator to set them.")
        }
        return lookup
    }

    /// Apple order ids are short letters and digits (e.g. MK5TTTVWJH), in upper case as Apple writes
    /// them: one typed in lower case is asked for, kept and found again as Apple's.
    private func appleOrderIDField(_ form: FormFields) throws -> String {
        let id = try form.required("apple_order_id", label: "The Apple order id", maxLength: 64)
        guard id.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)) }) else {
            throw BadRequest("An Apple order id holds only letters and digits (like MK5TTTVWJH, from the buyer's receipt e-mail).")
        }
        return id.uppercased()
    }
}

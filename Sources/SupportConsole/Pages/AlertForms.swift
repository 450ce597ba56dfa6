/// An open alert's actions for the support role: credit to one of the buyer's open orders for
/// the product (or a typed order id), and resolve with a note. Both come back to this page.
struct AlertForms {
    let alert: AlertRow
    let user: ConsoleUser
    let context: FormContext
    let openOrders: [OpenOrders.Order]

    func render() -> HTML {
        "\(alert.isCreditable ? credit : "")\(resolve)"
    }

    private var back: HTML { "<input type=\"hidden\" name=\"return_to\" value=\"\(context.returnTo)\">" }

    /// The confirm (console.js) names the user, product, transaction and the order chosen at submit
    /// time; without JavaScript the chosen order is the one in the form, as shown.
    private var credit: HTML {
        let typed = context.typed("order_id", alertID: alert.id)
        let choice: HTML
        if openOrders.isEmpty {
            choice = """
                <span class="why block">No open order of \(alert.userID) for \(alert.productID): type the order id \
                (create the order in the web tier first if there is none).</span>\
                <input type="text" name="order_id" required placeholder="order id" value="\(typed)" aria-label="Order id for alert \(alert.id)">
                """
        } else {
            // One open order, or the one the receipt named, is the choice; among several, none is
            // chosen for support (the newest is not necessarily the buyer's).
            let preselected = openOrders.count == 1 ? openOrders[0].orderID : openOrders.first { $0.orderID == alert.orderID }?.orderID
            let options = openOrders.map { order -> HTML in
                "<option value=\"\(order.orderID)\"\(HTML(trusted: order.orderID == preselected ? " selected" : ""))>\(order.orderID) · \(DisplayFormat.time(order.createdAt))</option>"
            }
            let none: HTML = preselected == nil ? "<option value=\"\" selected>choose an order…</option>" : ""
            choice = """
                <label>open order <select name="order_choice" aria-label="Open order of \(alert.userID) for \(alert.productID)">\(none)\(options)</select></label>\
                <input type="text" name="order_id" placeholder="or another order id" value="\(typed)" aria-label="Another order id for alert \(alert.id)">
                """
        }
        return """
            <form class="inline credit" method="post" action="/alerts/\(alert.id)/credit" data-confirm-credit \
            data-user="\(alert.userID)" data-product="\(alert.productID)" data-transaction="\(alert.transactionID)" \
            data-confirm="Credit \(alert.productID) (Apple transaction \(alert.transactionID)) of user \(alert.userID) to the chosen order?">\
            \(Components.csrfField(user))\(back)\(choice)<button type="submit">Credit to order</button></form>
            """
    }

    /// Closing a paid_not_credited alert without paying leaves the buyer without what they paid
    /// for: it asks first (and a checkbox says so without JavaScript). Closing a config_error or a
    /// receipt_replay asks too: the first does not fix the setting, the second ends a look into an account.
    private var resolve: HTML {
        let unpaid = alert.kind == "paid_not_credited"
        let check: HTML = unpaid ? """
            <label class="check"><input type="checkbox" name="confirm_no_credit" value="yes" required> the buyer is owed nothing</label>
            """ : ""
        let confirm: HTML = confirmation.map { " data-confirm=\"\($0)\"" } ?? ""
        return """
            <form class="inline" method="post" action="/alerts/\(alert.id)/resolve"\(confirm)>\(Components.csrfField(user))\(back)\
            <input type="text" name="note" required placeholder="what was done" value="\(context.typed("note", alertID: alert.id))" \
            aria-label="Note for alert \(alert.id)">\(check)<button type="submit" class="secondary">Resolve</button></form>
            """
    }

    private var confirmation: String? {
        switch alert.kind {
        case "paid_not_credited":
            "Resolve without crediting? \(alert.userID ?? "–") paid for \(alert.productID ?? "–") (transaction \(alert.transactionID ?? "–")) and gets nothing from this."
        case "config_error":
            "Resolve this config_error? Resolving does not fix the setting: only once the operator has fixed it (e.g. APPLE_SHARED_SECRET) "
                + "and re-queued the jobs will they be credited; a job still failing raises it again."
        case "receipt_replay":
            "Resolve this receipt_replay? Nothing was credited to \(alert.userID ?? "–"); resolve only once the account has been looked into."
        default: nil
        }
    }
}

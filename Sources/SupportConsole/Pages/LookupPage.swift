/// Apple order id lookup: the id from the buyer's e-mailed Apple receipt → its
/// transactions, each creditable to an order. Unavailable until a lookup is configured.
struct LookupPage {
    let available: Bool
    let appleOrderID: String?
    /// Shown in the box without having been looked up (handed over by the find box).
    var typed: String? = nil
    let transactions: [LookedUpTransaction]
    /// The last form's outcome: beside the transaction it was about, else at the top.
    var flash: Flash? = nil
    /// A result asked for that is gone (expired, or another session's).
    var expired = false

    /// What the page is for, in support's words.
    static let purpose: HTML = """
        <p class="why">The buyer's receipt e-mail from Apple carries an order id (letters and digits, like MK5TTTVWJH). \
        Apple tells us every purchase in that order; one not in our ledger can be credited to the buyer's order here.</p>
        """

    func render(_ user: ConsoleUser) -> HTML {
        guard available else {
            return Layout.page(title: "Apple order lookup", current: "/lookup", user: user, """
                <section class="card"><p class="notice bad">Lookup unavailable: this console has no App Store Server API \
                credentials configured (APPLE_BUNDLE_ID and APPSTORE_ISSUER_ID, APPSTORE_KEY_ID, APPSTORE_PRIVATE_KEY_FILE); \
                ask an operator to set them.</p><p>Until then, search the buyer's jobs by user or order id.</p></section>
                """)
        }
        let form: HTML = user.role.mayAct ? """
            <form class="card search" method="post" action="/lookup">\(Components.csrfField(user))\
            <input type="search" name="apple_order_id" value="\(appleOrderID ?? typed ?? "")" required placeholder="Apple order id, e.g. MK5TTTVWJH" aria-label="Apple order id">\
            <button type="submit">Look up</button></form>
            """ : "<p class=\"empty\">Looking up asks Apple on the buyer's behalf and is kept for the support role.</p>"
        let rows = transactions.map { transaction -> [HTML] in
            let rowID = "transaction-\(transaction.transactionID)"
            return ["<span id=\"\(rowID)\">\(Components.searchLink(transaction.transactionID))</span>", "\(transaction.productID)",
                    "\(transaction.quantity)", "\(transaction.environment)", "\(DisplayFormat.time(transaction.purchaseDate))",
                    transaction.revoked ? Components.badge("revoked") : "–",
                    "\(Components.beside(flash, rowID: rowID))\(ledger(transaction, user))"]
        }
        let results = appleOrderID == nil ? HTML("") : Components.table(
            ["transaction", "product", "qty", "env", "purchased", "refund", "ledger"], rows, empty: "Apple returned no transactions.")
        let gone: HTML = expired
            ? Components.notice("A lookup's result is kept for ten minutes; look the order id up again to see it.", tone: "bad") : ""
        let rowShown = transactions.contains { "transaction-\($0.transactionID)" == flash?.rowID }
        return Layout.page(title: "Apple order lookup", current: "/lookup", user: user,
                           "\(Self.purpose)\(gone)\(Components.outcome(flash, rowShown: rowShown))\(form)\(results)")
    }

    private func ledger(_ transaction: LookedUpTransaction, _ user: ConsoleUser) -> HTML {
        guard let order = transaction.creditedOrderID else { return creditForm(transaction, user) }
        return "credited to \(Components.searchLink(order)) for \(Components.userLink(transaction.creditedUserID))"
    }

    /// The same confirmation as an alert's credit (console.js names the user and order typed, the
    /// product and transaction); a refused credit comes back with what was typed.
    private func creditForm(_ transaction: LookedUpTransaction, _ user: ConsoleUser) -> HTML {
        guard user.role.mayAct, !transaction.revoked, let appleOrderID else { return "not credited" }
        let refused = flash?.tone == "bad" && flash?.fields["transaction_id"] == transaction.transactionID
        let typed = { (name: String) in refused ? flash?.fields[name] ?? "" : "" }
        return """
            <form class="inline credit" method="post" action="/lookup/credit" data-confirm-credit \
            data-product="\(transaction.productID)" data-transaction="\(transaction.transactionID)" data-apple-order="\(appleOrderID)" \
            data-confirm="Credit \(transaction.productID) (Apple transaction \(transaction.transactionID), Apple order \(appleOrderID)) to the user and order typed?">\
            \(Components.csrfField(user))<input type="hidden" name="return_to" value="/lookup">\
            <input type="hidden" name="apple_order_id" value="\(appleOrderID)"><input type="hidden" name="transaction_id" value="\(transaction.transactionID)">\
            <input type="text" name="user_id" required placeholder="user id" value="\(typed("user_id"))" aria-label="User id for transaction \(transaction.transactionID)">\
            <input type="text" name="order_id" required placeholder="order id" value="\(typed("order_id"))" aria-label="Order id for transaction \(transaction.transactionID)">\
            <button type="submit">Credit to order</button></form>
            """
    }
}

/// Apple order id lookup: the id from the buyer's e-mailed Apple receipt → its
/// transactions, each creditable to an order. Unavailable until a lookup is configured.
struct LookupPage {
    let available: Bool
    let appleOrderID: String?
    /// Shown in the box without having been looked up (handed over by the find box).
    var typed: String? = nil
    let transactions: [LookedUpTransaction]
    let notice: (text: String, tone: String)?

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
            [Components.searchLink(transaction.transactionID), "\(transaction.productID)", "\(transaction.quantity)",
             "\(transaction.environment)", "\(DisplayFormat.time(transaction.purchaseDate))",
             transaction.revoked ? Components.badge("revoked") : "–",
             transaction.creditedOrderID.map { order in "credited to \(Components.searchLink(order)) for \(Components.userLink(transaction.creditedUserID))" }
                ?? creditForm(transaction, user)]
        }
        let results = appleOrderID == nil ? HTML("") : Components.table(
            ["transaction", "product", "qty", "env", "purchased", "refund", "ledger"], rows, empty: "Apple returned no transactions.")
        return Layout.page(title: "Apple order lookup", current: "/lookup", user: user,
                           "\(Self.purpose)\(Components.notice(notice?.text, tone: notice?.tone ?? "ok"))\(form)\(results)")
    }

    private func creditForm(_ transaction: LookedUpTransaction, _ user: ConsoleUser) -> HTML {
        guard user.role.mayAct, !transaction.revoked, let appleOrderID else { return "not credited" }
        return """
            <form class="inline" method="post" action="/lookup/credit" data-confirm="Credit this transaction?">\(Components.csrfField(user))\
            <input type="hidden" name="apple_order_id" value="\(appleOrderID)"><input type="hidden" name="transaction_id" value="\(transaction.transactionID)">\
            <input type="text" name="user_id" required placeholder="user id" aria-label="User id"><input type="text" name="order_id" required placeholder="order id" aria-label="Order id">\
            <button type="submit">Credit</button></form>
            """
    }
}

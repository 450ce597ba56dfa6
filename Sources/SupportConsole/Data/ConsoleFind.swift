import Postgres

/// What the header's "find" box found: each thing the text names, with the page that shows it.
public struct FindMatch: Sendable, Equatable {
    public enum Kind: String, Sendable { case job, user, order, transaction, appleOrder = "Apple order" }
    public let kind: Kind
    public let key: String
    public let userID: String?
    public let href: String
}

/// The one "find" box: the text may be a job id (`#6` too), a user id, an order id, an
/// Apple transaction or original transaction id, or an Apple order id (from the buyer's receipt
/// e-mail, known once looked up) — support rarely knows which the buyer sent — so each is tried
/// against jobs, the ledger, the orders, the alerts and the lookups, each on its own index.
struct ConsoleFind: Sendable {
    let client: PostgresClient

    static let jobSQL = "SELECT id, user_id FROM iap.jobs WHERE id = $1"
    /// A user exists when anything names them; each arm stops at its index's first entry.
    static let userSQL = """
        SELECT EXISTS (SELECT 1 FROM iap.jobs WHERE user_id = $1) OR EXISTS (SELECT 1 FROM iap.credits WHERE user_id = $1)
            OR EXISTS (SELECT 1 FROM iap.orders WHERE user_id = $1) OR EXISTS (SELECT 1 FROM iap.alerts WHERE user_id = $1)
        """
    static let ordersSQL = "SELECT order_id, user_id, transaction_id FROM iap.orders WHERE order_id = $1 OR transaction_id = $1 LIMIT 20"
    static let ledgerSQL = """
        SELECT transaction_id, order_id, user_id, job_id FROM iap.credits
        WHERE transaction_id = $1 OR original_transaction_id = $1 OR order_id = $1 LIMIT 20
        """
    static let alertsSQL = "SELECT transaction_id, order_id, user_id, job_id FROM iap.alerts WHERE transaction_id = $1 OR order_id = $1 LIMIT 20"
    /// Jobs that still carry the order id themselves (a pending job before any ledger row).
    static let jobsByOrderSQL = "SELECT id, user_id FROM iap.jobs WHERE order_id = $1 ORDER BY id DESC LIMIT 2"

    /// An Apple order id is stored only by a lookup (console or `support lookup-order`): its
    /// transactions lead on to the ledger rows and their buyers. Apple's ids are upper case; one
    /// typed in lower case is tried as Apple writes it too.
    static let appleOrderSQL = """
        SELECT user_id, transaction_ids, apple_order_id FROM iap.apple_order_lookups
        WHERE apple_order_id IN ($1, upper($1)) AND result = 'found' ORDER BY id DESC LIMIT 20
        """
    /// When the text as typed names nothing: the user ids it names in another case ("Frank" →
    /// frank), through the orders and the alerts (migration 0036).
    static let usersAnyCaseSQL = """
        SELECT DISTINCT user_id FROM (
            (SELECT user_id FROM iap.orders WHERE lower(user_id) = lower($1) LIMIT 20)
            UNION ALL (SELECT user_id FROM iap.alerts WHERE lower(user_id) = lower($1) LIMIT 20)) AS named
        ORDER BY user_id LIMIT 20
        """
    static let ledgerByTransactionsSQL = "SELECT transaction_id, user_id FROM iap.credits WHERE transaction_id = ANY($1::text[])"

    /// `#6` and `6` both mean job 6; anything else is looked up as typed.
    static func jobID(_ text: String) -> Int? {
        let digits = text.hasPrefix("#") ? String(text.dropFirst()) : text
        guard let id = Int(digits), id > 0 else { return nil }
        return id
    }

    func find(_ text: String) async throws -> [FindMatch] {
        var matches: [FindMatch] = []
        func add(_ match: FindMatch) { if !matches.contains(where: { $0.kind == match.kind && $0.key == match.key }) { matches.append(match) } }
        if let id = Self.jobID(text), let row = try await client.query(Self.jobSQL, [id]).first {
            add(FindMatch(kind: .job, key: "#\(id)", userID: try row.decode(at: 1), href: "/jobs/\(id)"))
        }
        if text.hasPrefix("#") { return matches }
        if try await client.query(Self.userSQL, [text])[0].decode(Bool.self, at: 0) {
            add(FindMatch(kind: .user, key: text, userID: text, href: Self.userHref(text)))
        }
        // A transaction or an order leads to its buyer's page, where the story, the orders, the
        // ledger and the alert with its actions are together; a transaction of no known buyer, to its job.
        for row in Array(try await client.query(Self.ledgerSQL, [text])) + Array(try await client.query(Self.alertsSQL, [text])) {
            let transaction: String? = try row.decode(at: 0)
            let order: String? = try row.decode(at: 1)
            let user: String? = try row.decode(at: 2)
            let job: Int? = try row.decode(at: 3)
            if order == text, let user { add(FindMatch(kind: .order, key: text, userID: user, href: Self.userHref(user))) }
            else if let transaction {
                add(FindMatch(kind: .transaction, key: transaction, userID: user,
                              href: user.map(Self.userHref) ?? job.map { "/jobs/\($0)" } ?? "/jobs\(FormFields.query(["q": text]))"))
            }
        }
        for row in try await client.query(Self.ordersSQL, [text]) {
            let order: String = try row.decode(at: 0)
            let user: String = try row.decode(at: 1)
            if order == text { add(FindMatch(kind: .order, key: order, userID: user, href: Self.userHref(user))) }
            else if !matches.contains(where: { $0.kind == .transaction }) {
                add(FindMatch(kind: .transaction, key: text, userID: user, href: Self.userHref(user)))
            }
        }
        try await findAppleOrder(text, add: add)
        if !matches.contains(where: { $0.kind == .order }), let row = try await client.query(Self.jobsByOrderSQL, [text]).first {
            let user: String? = try row.decode(at: 1)
            add(FindMatch(kind: .order, key: text, userID: user, href: "/jobs\(FormFields.query(["q": text]))"))
        }
        if matches.isEmpty {
            for row in try await client.query(Self.usersAnyCaseSQL, [text]) {
                let user: String = try row.decode(at: 0)
                add(FindMatch(kind: .user, key: user, userID: user, href: Self.userHref(user)))
            }
        }
        return matches
    }

    /// Each transaction a lookup of the Apple order found, at its job or buyer; when none is in the
    /// ledger, the buyer the lookup named, or else the lookup page to ask Apple again (and credit).
    private func findAppleOrder(_ text: String, add: (FindMatch) -> Void) async throws {
        var transactions: [String] = [], users: [String] = [], appleOrderID = text
        for row in try await client.query(Self.appleOrderSQL, [text]) {
            appleOrderID = try row.decode(at: 2)
            if let user = try row.decode(String?.self, at: 0), !users.contains(user) { users.append(user) }
            for transaction in try row.decode([String].self, at: 1) where !transactions.contains(transaction) { transactions.append(transaction) }
        }
        guard !transactions.isEmpty || !users.isEmpty else { return }
        let ledger = Array(try await client.query(Self.ledgerByTransactionsSQL, [transactions]))
        for row in ledger {
            let user: String = try row.decode(at: 1)
            add(FindMatch(kind: .transaction, key: try row.decode(at: 0), userID: user, href: Self.userHref(user)))
        }
        if ledger.isEmpty {
            let user = users.count == 1 ? users[0] : nil
            add(FindMatch(kind: .appleOrder, key: appleOrderID, userID: user,
                          href: user.map(Self.userHref) ?? "/lookup\(FormFields.query(["apple_order_id": appleOrderID]))"))
        }
    }

    static func userHref(_ user: String) -> String { "/users\(FormFields.query(["id": user]))" }
}

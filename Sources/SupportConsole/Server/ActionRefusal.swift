import Settlement

/// Why an action was not done, in words support can act on. Apple refusing this console's
/// credentials, Apple being unreachable and a refusal by the ledger's rules are different
/// problems for different people, so each gets its own sentence (never "the database did not answer").
struct ActionRefusal: Error {
    let message: String
    var alertID: Int? = nil

    init(message: String, alertID: Int? = nil) {
        self.message = message
        self.alertID = alertID
    }

    /// `alertID` is nil for a credit from an Apple order lookup, which names no alert.
    init(_ refusal: SupportError, alertID: Int?, verb: String) {
        let alert = alertID.map { "alert #\($0)" } ?? "the alert"
        let why: String = switch refusal {
        case .alertNotFound: "there is no \(alert) (it may have been removed; reload the list)."
        case .alertNotOpen: "\(alert) was already resolved, perhaps by a colleague a moment ago; nothing was changed."
        case .notCreditable(let reason): "this alert cannot be credited (\(reason)); resolve it with a note instead."
        case .orderNotFound(let order): "there is no order \(order); check the id against the buyer's open orders (their user page lists them)."
        case .orderMismatch(let reason): "\(reason); nothing was changed."
        case .noCreditNotConfirmed: "the buyer paid and was not credited; tick “the buyer is owed nothing” to close it without "
            + "crediting, or credit it to an order instead."
        }
        self.init(message: "\(verb): \(why)", alertID: alertID)
    }

    init(_ failure: OrderLookupError) {
        switch failure {
        case .appleUnavailable("credentials_refused"):
            self.init(message: "Apple refused this console's App Store Server API credentials (HTTP 401/403). Nothing is wrong "
                      + "with the order or the database: ask an operator to check APPSTORE_ISSUER_ID, APPSTORE_KEY_ID and "
                      + "APPSTORE_PRIVATE_KEY_FILE.")
        case .appleUnavailable(let reason):
            self.init(message: "Apple could not be asked just now (\(reason)); nothing was changed. Try again in a minute.")
        default:
            self.init(message: failure.description.prefix(1).uppercased() + failure.description.dropFirst() + ".")
        }
    }
}

import Foundation
import HTTP
import Postgres

/// What a form's POST leaves for the page it redirects to (post/redirect/get): the outcome or
/// error in words, the fields as typed, a lookup's results.
struct Flash: Sendable, Codable {
    var message: String
    /// "ok" or "bad": the notice's colour.
    var tone: String
    /// The form fields as the person typed them, to put back in the form.
    var fields: [String: String] = [:]
    /// The alert a credit or resolve was about, so its row carries the message.
    var alertID: Int? = nil
    var lookup: LookupShown? = nil

    /// The row the outcome belongs beside: the alert's, or the looked-up transaction's.
    var rowID: String? {
        if let alertID { return "alert-\(alertID)" }
        return lookup == nil ? nil : fields["transaction_id"].map { "transaction-\($0)" }
    }
}

/// A lookup's answer, shown on the page the lookup redirects to.
struct LookupShown: Sendable, Codable {
    let appleOrderID: String
    let transactions: [LookedUpTransaction]
}

/// Form results in `iap.console_form_results`, so any console process behind a load balancer can
/// show what another one did: under a random token, for ten minutes, read once (a lookup's result
/// for all ten), and only by the
/// session that posted the form (a token from another session, a used or an expired one reads as
/// nothing and the page asks to try again). Each put sweeps a few expired rows, oldest first.
struct FlashStore: Sendable {
    let client: PostgresClient
    static let lifetimeSeconds = 600.0

    static let putSQL = """
        WITH swept AS (
            DELETE FROM iap.console_form_results WHERE token = ANY(ARRAY(
                SELECT token FROM iap.console_form_results WHERE expires_at < now() ORDER BY expires_at LIMIT 20)))
        INSERT INTO iap.console_form_results (token, session_hash, result, expires_at)
        VALUES ($1, sha256(convert_to($2, 'UTF8')), $3::jsonb, now() + make_interval(secs => $4))
        """
    /// A lookup's result stays readable for its ten minutes (Back and reload show it again, and
    /// Apple is not asked again); any other result is read once.
    static let takeSQL = """
        WITH found AS (
            SELECT token, result FROM iap.console_form_results
            WHERE token = $1 AND session_hash = sha256(convert_to($2, 'UTF8')) AND expires_at > now()),
        used AS (
            DELETE FROM iap.console_form_results WHERE token = (SELECT token FROM found WHERE NOT result ? 'lookup'))
        SELECT result::text FROM found
        """

    /// `session` is the session's CSRF token: secret, one per session, and carried by every page.
    func put(_ flash: Flash, session: String) async throws -> String {
        let token = UUID().uuidString.lowercased()
        let json = String(decoding: try JSONEncoder().encode(flash), as: UTF8.self)
        _ = try await client.query(Self.putSQL, [token, session, json, Self.lifetimeSeconds])
        return token
    }

    /// The result once (a lookup's for ten minutes): a reload of the page shows it no more (the
    /// change it reports is on the page itself).
    func take(_ token: String?, session: String) async throws -> Flash? {
        guard let token, token.count <= 64 else { return nil }
        guard let row = try await client.query(Self.takeSQL, [token, session]).first else { return nil }
        return try? JSONDecoder().decode(Flash.self, from: Data(try row.decode(String.self, at: 0).utf8))
    }
}

/// Where a form sends the person back: a path on this console only (never `//host` or a URL).
enum ReturnPath {
    static func from(_ value: String?, default fallback: String) -> String {
        guard let value, value.hasPrefix("/"), !value.hasPrefix("//"), !value.contains("\\"),
              value.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7f }) else { return fallback }
        return value
    }

    /// `path` with the flash token (replacing an older one), scrolled to the outcome (beside its row).
    static func with(_ path: String, flash token: String) -> String {
        let parts = path.prefix { $0 != "#" }.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        let query = parts.count > 1 ? parts[1].split(separator: "&").map(String.init).filter { !$0.hasPrefix("flash=") } : []
        return parts[0] + "?" + (query + ["flash=" + token]).joined(separator: "&") + "#\(Components.outcomeID)"
    }
}

/// What a page with forms needs to send people back to it and show what happened there.
struct FormContext: Sendable {
    /// This page's path and query (without an old flash token), for the forms' `return_to`.
    let returnTo: String
    let flash: Flash?

    static let none = FormContext(returnTo: "/", flash: nil)

    /// The value a form had when it was refused, else "".
    func typed(_ name: String, alertID: Int? = nil) -> String {
        guard let flash, flash.tone == "bad", alertID == nil || flash.alertID == alertID else { return "" }
        return flash.fields[name] ?? ""
    }
}

extension ConsoleApp {
    func formContext(_ request: HTTPRequest, _ form: FormFields, user: ConsoleUser) async throws -> FormContext {
        let query = (request.query ?? "").split(separator: "&").filter { !$0.hasPrefix("flash=") }.joined(separator: "&")
        return FormContext(returnTo: request.path + (query.isEmpty ? "" : "?" + query),
                           flash: try await flashes.take(form.text("flash"), session: user.csrfToken))
    }
}

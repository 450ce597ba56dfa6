import Foundation
import HTTP
import Synchronization

/// What a form's POST leaves for the page it redirects to (post/redirect/get): the outcome or
/// error in words, the fields as typed, a lookup's results. Kept in this process for a few
/// minutes under a random token that only its owner may read; a token from another console
/// process, or an expired one, reads as nothing and the page asks to try again.
struct Flash: Sendable {
    var message: String
    /// "ok" or "bad": the notice's colour.
    var tone: String
    /// The form fields as the person typed them, to put back in the form.
    var fields: [String: String] = [:]
    /// The alert a credit or resolve was about, so its row carries the message.
    var alertID: Int? = nil
    var lookup: (appleOrderID: String, transactions: [LookedUpTransaction])? = nil
}

final class FlashStore: Sendable {
    private struct Entry { let owner: String; let flash: Flash; let expires: Date }
    private let entries = Mutex<[String: Entry]>([:])
    static let lifetime: TimeInterval = 600
    static let capacity = 10_000

    func put(_ flash: Flash, owner: String) -> String {
        let token = UUID().uuidString.lowercased()
        let now = Date()
        entries.withLock { entries in
            if entries.count >= Self.capacity { entries = entries.filter { $0.value.expires > now } }
            if entries.count < Self.capacity {
                entries[token] = Entry(owner: owner, flash: flash, expires: now + Self.lifetime)
            }
        }
        return token
    }

    /// Read, not consumed: a reload of the page shows the same result (the lookup's table).
    func get(_ token: String?, owner: String) -> Flash? {
        guard let token else { return nil }
        return entries.withLock { entries in
            guard let entry = entries[token], entry.owner == owner, entry.expires > Date() else { return nil }
            return entry.flash
        }
    }
}

/// Where a form sends the person back: a path on this console only (never `//host` or a URL).
enum ReturnPath {
    static func from(_ value: String?, default fallback: String) -> String {
        guard let value, value.hasPrefix("/"), !value.hasPrefix("//"), !value.contains("\\"),
              value.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7f }) else { return fallback }
        return value
    }

    /// `path` with the flash token (replacing an older one) and the alert's row in view.
    static func with(_ path: String, flash token: String, alertID: Int? = nil) -> String {
        let parts = path.prefix { $0 != "#" }.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        let query = parts.count > 1 ? parts[1].split(separator: "&").map(String.init).filter { !$0.hasPrefix("flash=") } : []
        return parts[0] + "?" + (query + ["flash=" + token]).joined(separator: "&") + (alertID.map { "#alert-\($0)" } ?? "")
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
    func formContext(_ request: HTTPRequest, _ form: FormFields, user: ConsoleUser) -> FormContext {
        let query = (request.query ?? "").split(separator: "&").filter { !$0.hasPrefix("flash=") }.joined(separator: "&")
        return FormContext(returnTo: request.path + (query.isEmpty ? "" : "?" + query), flash: flashes.get(form.text("flash"), owner: user.name))
    }
}

import Foundation
import HTTP

/// Refuses requests that did not come to this console's own name or from its own pages, before
/// any route runs: a `Host` that is neither an IP literal, `localhost`, the listen host nor an
/// allowed host is DNS rebinding (a hostile name pointed at our address); a state-changing request
/// whose `Origin` or `Sec-Fetch-Site` names another site is cross-site forgery, refused even when
/// the CSRF token would pass (a second layer).
struct RequestOriginCheck: Sendable {
    let allowedNames: Set<String>

    init(configuration: ConsoleConfiguration) {
        allowedNames = Set((configuration.allowedHosts.map(Self.hostName) + [configuration.host, "localhost"]).map { $0.lowercased() })
    }

    /// nil when the request may go on; otherwise the refusal.
    func refusal(_ request: HTTPRequest) -> HTTPResponse? {
        let host = request.header("Host")
        // HTTP/1.0 health checks may send none; a browser always does.
        if let host, !isOurs(Self.hostName(host)) {
            return refuse(421, "This console does not answer to the name \(Self.hostName(host)). "
                          + "Reach it by its own address, or add the name to CONSOLE_ALLOWED_HOSTS.")
        }
        guard request.method != "GET", request.method != "HEAD" else { return nil }
        if let site = request.header("Sec-Fetch-Site")?.lowercased(), site != "same-origin", site != "none" {
            return refuse(403, "This form came from another site (Sec-Fetch-Site: \(site)); it was not sent.")
        }
        // Our `Referrer-Policy: no-referrer` makes browsers send `Origin: null` even from our own
        // pages; then Sec-Fetch-Site (above) and the CSRF token decide.
        if let origin = request.header("Origin"), origin != "null" {
            let authority = origin.range(of: "://").map { String(origin[$0.upperBound...]) }
            guard let authority, let host, authority.lowercased() == host.lowercased() else {
                return refuse(403, "This form came from another site (Origin \(origin)); it was not sent.")
            }
        }
        return nil
    }

    private func isOurs(_ name: String) -> Bool {
        allowedNames.contains(name.lowercased()) || Self.isIPLiteral(name)
    }

    private func refuse(_ status: Int, _ message: String) -> HTTPResponse {
        Responses.html(MessagePage.render(title: "Refused", message: message, user: nil), status: status)
    }

    /// "name:port" → "name"; "[::1]:8090" → "::1".
    static func hostName(_ host: String) -> String {
        let trimmed = host.trimmingCharacters(in: .whitespaces)
        if trimmed.hasPrefix("["), let end = trimmed.firstIndex(of: "]") {
            return String(trimmed[trimmed.index(after: trimmed.startIndex)..<end])
        }
        return String(trimmed.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
    }

    static func isIPLiteral(_ name: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, name, &v4) == 1 || inet_pton(AF_INET6, name, &v6) == 1
    }
}

import Foundation
import HTTP

/// A cookie-keeping client for the console without a browser: signs in, reads pages, posts forms.
final class ConsoleSession: @unchecked Sendable {
    let baseURL: String
    let transport: SocketHTTPTransport
    var cookies: [String: String] = [:]
    var extraHeaders: HTTPHeaderFields = []

    init(baseURL: String) throws {
        self.baseURL = baseURL
        transport = try SocketHTTPTransport()
    }

    func close() async { await transport.shutdown() }

    @discardableResult
    func get(_ path: String) async throws -> HTTPClientResponse {
        try await send("GET", path, body: nil)
    }

    @discardableResult
    func post(_ path: String, _ fields: [(String, String)]) async throws -> HTTPClientResponse {
        let allowed = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        let body = fields.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")" }.joined(separator: "&")
        return try await send("POST", path, body: body)
    }

    func signIn(_ user: String, password: String) async throws -> HTTPClientResponse {
        let form = try await get("/login")
        let token = Self.hiddenField("csrf", in: form.text) ?? ""
        return try await post("/login", [("csrf", token), ("user", user), ("password", password)])
    }

    /// The session's CSRF token, read from the sign-out form on any page.
    func csrfToken() async throws -> String {
        Self.hiddenField("csrf", in: try await get("/").text) ?? ""
    }

    private func send(_ method: String, _ path: String, body: String?) async throws -> HTTPClientResponse {
        var headers = extraHeaders
        if !cookies.isEmpty { headers.append(("Cookie", cookies.map { "\($0.key)=\($0.value)" }.joined(separator: "; "))) }
        if body != nil { headers.append(("Content-Type", "application/x-www-form-urlencoded")) }
        let response = try await transport.send(
            HTTPClientRequest(method: method, url: URL(string: baseURL + path)!, headers: headers, body: Array((body ?? "").utf8)),
            timeout: .seconds(20))
        for (name, value) in response.headers where name.lowercased() == "set-cookie" {
            let pair = value.split(separator: ";")[0].split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let cookieName = String(pair[0])
            let cookieValue = pair.count > 1 ? String(pair[1]) : ""
            if value.contains("Max-Age=0") || cookieValue.isEmpty { cookies[cookieName] = nil } else { cookies[cookieName] = cookieValue }
        }
        return response
    }

    static func hiddenField(_ name: String, in html: String) -> String? {
        guard let range = html.range(of: "name=\"\(name)\" value=\"") else { return nil }
        return String(html[range.upperBound...].prefix { $0 != "\"" })
    }
}

extension HTTPClientResponse {
    var text: String { String(decoding: body, as: UTF8.self) }
}

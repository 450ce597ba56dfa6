import Foundation

/// `application/x-www-form-urlencoded` fields, from a query string or a form body.
public struct FormFields: Sendable {
    private var values: [String: String] = [:]

    /// nil when the text is not valid form encoding (bad percent escapes): the caller answers 400.
    public init?(_ encoded: String?) {
        guard let encoded, !encoded.isEmpty else { return }
        for pair in encoded.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = Self.decode(parts[0]), let value = Self.decode(parts.count > 1 ? parts[1] : "") else { return nil }
            if values[name] == nil { values[name] = value }
        }
    }

    public init(_ values: [String: String]) { self.values = values }

    public subscript(_ name: String) -> String? { values[name] }

    /// A value with surrounding whitespace removed; nil when missing or blank.
    public func text(_ name: String) -> String? {
        guard let value = values[name]?.trimmingCharacters(in: .whitespacesAndNewlines), !value.isEmpty else { return nil }
        return value
    }

    private static func decode(_ part: Substring) -> String? {
        String(part).replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }

    /// Encodes pairs for links (`/jobs?q=…&before=…`); nil values are left out.
    public static func query(_ pairs: KeyValuePairs<String, String?>) -> String {
        let allowed = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        let encoded = pairs.compactMap { pair -> String? in
            guard let value = pair.value else { return nil }
            return pair.key + "=" + (value.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")
        }
        return encoded.isEmpty ? "" : "?" + encoded.joined(separator: "&")
    }
}

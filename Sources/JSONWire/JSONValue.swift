/// One parsed JSON document (RFC 8259). Numbers keep the exact text they were written with, so
/// the reader decides how to take them (an integer, a double, or a string as Apple's loose
/// fields want) and nothing is rounded on the way.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([JSONValue])
    /// Duplicate keys: the last one wins.
    case object([String: JSONValue])

    /// The member `key` of an object; nil when absent or when this is not an object.
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { members[key] } else { nil }
    }

    public var stringValue: String? {
        if case .string(let text) = self { text } else { nil }
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let items) = self { items } else { nil }
    }

    /// A number whose value is a whole number in Int64's range ("3", "-3", "3.0", "3e2"),
    /// as JSONDecoder reads an integer; nil for anything else.
    public var int64Value: Int64? {
        guard case .number(let text) = self else { return nil }
        if let whole = Int64(text) { return whole }
        return Double(text).flatMap { Int64(exactly: $0) }
    }
}

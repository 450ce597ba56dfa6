import Foundation

/// One bound parameter as libpq wants it: text or binary bytes, or NULL.
/// The server infers the type from the statement, so no OIDs are sent.
public struct PostgresBind: Sendable {
    public enum Format: Int32, Sendable { case text = 0, binary = 1 }
    public let bytes: [UInt8]?
    public let format: Format

    public init(text: String?) {
        self.bytes = text.map { Array($0.utf8) }
        self.format = .text
    }
    /// Text format from bytes that are already UTF-8.
    init(utf8Text: [UInt8]) {
        self.bytes = utf8Text
        self.format = .text
    }
    public init(binary: [UInt8]) {
        self.bytes = binary
        self.format = .binary
    }
    public static let null = PostgresBind(text: nil)
}

/// A Swift value that can be a query parameter.
public protocol PostgresEncodable: Sendable {
    var postgresBind: PostgresBind { get }
}

extension String: PostgresEncodable {
    public var postgresBind: PostgresBind { PostgresBind(text: self) }
}
extension Int: PostgresEncodable {
    public var postgresBind: PostgresBind { PostgresBind(text: String(self)) }
}
extension Int64: PostgresEncodable {
    public var postgresBind: PostgresBind { PostgresBind(text: String(self)) }
}
extension Int32: PostgresEncodable {
    public var postgresBind: PostgresBind { PostgresBind(text: String(self)) }
}
extension Double: PostgresEncodable {
    public var postgresBind: PostgresBind { PostgresBind(text: String(self)) }
}
extension Bool: PostgresEncodable {
    public var postgresBind: PostgresBind { PostgresBind(text: self ? "t" : "f") }
}
extension UUID: PostgresEncodable {
    public var postgresBind: PostgresBind { PostgresBind(text: uuidString.lowercased()) }
}
extension Date: PostgresEncodable {
    public var postgresBind: PostgresBind { PostgresBind(text: PostgresTimestamp.format(self)) }
}
extension Data: PostgresEncodable {
    /// bytea goes binary: no escaping, no doubling of size.
    public var postgresBind: PostgresBind { PostgresBind(binary: Array(self)) }
}
extension Array: PostgresEncodable where Element: PostgresArrayElement {
    public var postgresBind: PostgresBind {
        // Job ids and the settlement's text columns go out by the thousand per statement: written
        // directly, not through an array of optional strings; text in binary (`PostgresTextArray`).
        // By element type, not `as?`: an array of other optionals that holds only nils casts to
        // [String?], and the binary form would name it text[]. And a cast from a generic array
        // checks every element (`_arrayConditionalCast`); the types being equal, the array is
        // reinterpreted instead.
        if Element.self == Int.self { return PostgresBind(utf8Text: PostgresArrayLiteral.encode(unsafeBitCast(self, to: [Int].self))) }
        if Element.self == String.self { return PostgresTextArray.bind(unsafeBitCast(self, to: [String].self).lazy.map { Optional($0) }) }
        if Element.self == String?.self { return PostgresTextArray.bind(unsafeBitCast(self, to: [String?].self)) }
        if Element.self == PostgresTID.self { return PostgresTIDArray.bind(unsafeBitCast(self, to: [PostgresTID].self)) }
        return PostgresBind(utf8Text: PostgresArrayLiteral.encode(self.map(\.arrayLiteralItem)))
    }
}
extension Optional: PostgresEncodable where Wrapped: PostgresEncodable {
    public var postgresBind: PostgresBind { self?.postgresBind ?? .null }
}

/// A jsonb parameter or column, kept as its JSON text.
public struct PostgresJSON: PostgresEncodable, Equatable {
    public let text: String
    public init(text: String) { self.text = text }
    public init<T: Encodable>(encoding value: T) throws {
        let data = try JSONEncoder().encode(value)
        self.text = String(decoding: data, as: UTF8.self)
    }
    public var postgresBind: PostgresBind { PostgresBind(text: text) }
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try JSONDecoder().decode(type, from: Data(text.utf8))
    }
}

/// Types that can appear in a bigint[] or text[] parameter.
public protocol PostgresArrayElement: Sendable {
    var arrayLiteralItem: String? { get }
}
extension Int: PostgresArrayElement { public var arrayLiteralItem: String? { String(self) } }
extension Int64: PostgresArrayElement { public var arrayLiteralItem: String? { String(self) } }
extension String: PostgresArrayElement { public var arrayLiteralItem: String? { self } }
extension Bool: PostgresArrayElement { public var arrayLiteralItem: String? { self ? "t" : "f" } }
extension Double: PostgresArrayElement { public var arrayLiteralItem: String? { String(self) } }
extension UUID: PostgresArrayElement { public var arrayLiteralItem: String? { uuidString.lowercased() } }
extension Date: PostgresArrayElement { public var arrayLiteralItem: String? { PostgresTimestamp.format(self) } }
extension Optional: PostgresArrayElement where Wrapped: PostgresArrayElement {
    public var arrayLiteralItem: String? { self?.arrayLiteralItem }
}

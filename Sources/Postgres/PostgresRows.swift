import Foundation

/// A query result copied out of the PGresult (which is freed at once), so it can
/// cross tasks freely. Cells are in text format.
public struct PostgresRows: Sendable, Sequence {
    public let columns: [String]
    public let cells: [[String?]]
    /// Rows touched by INSERT/UPDATE/DELETE (PQcmdTuples), or the row count.
    public let affectedRows: Int
    /// The server's command tag (`UPDATE 3`, `COMMIT`, `ROLLBACK`), empty for row results.
    public var commandTag: String = ""

    public var count: Int { cells.count }
    public var isEmpty: Bool { cells.isEmpty }
    public var first: PostgresRow? { cells.isEmpty ? nil : self[0] }

    public subscript(index: Int) -> PostgresRow { PostgresRow(columns: columns, cells: cells[index]) }

    public func makeIterator() -> AnyIterator<PostgresRow> {
        var index = 0
        return AnyIterator {
            guard index < cells.count else { return nil }
            defer { index += 1 }
            return self[index]
        }
    }
}

public struct PostgresRow: Sendable {
    public let columns: [String]
    public let cells: [String?]

    public func column(named name: String) throws -> Int {
        guard let index = columns.firstIndex(of: name) else {
            throw PostgresError(kind: .client, message: "no column \(name)")
        }
        return index
    }

    public func decode<T: PostgresDecodable>(_ type: T.Type = T.self, at index: Int) throws -> T {
        guard index < cells.count else { throw PostgresError(kind: .client, message: "no column #\(index)") }
        return try T.decode(postgresText: cells[index], column: columns[index])
    }

    public func decode<T: PostgresDecodable>(_ type: T.Type = T.self, _ name: String) throws -> T {
        try decode(type, at: try column(named: name))
    }
}

/// A Swift type that can be read from a text-format cell.
public protocol PostgresDecodable: Sendable {
    static func decode(postgresText text: String?, column: String) throws -> Self
}

/// Types that decode from a non-NULL cell; NULL is an error unless wrapped in Optional.
public protocol PostgresTextDecodable: PostgresDecodable {
    init?(postgresText: String)
}

extension PostgresTextDecodable {
    public static func decode(postgresText text: String?, column: String) throws -> Self {
        guard let text else {
            throw PostgresError(kind: .client, message: "column \(column) is NULL, expected \(Self.self)")
        }
        guard let value = Self(postgresText: text) else {
            throw PostgresError(kind: .client, message: "column \(column) is not a \(Self.self)")
        }
        return value
    }
}

extension Optional: PostgresDecodable where Wrapped: PostgresDecodable {
    public static func decode(postgresText text: String?, column: String) throws -> Self {
        guard text != nil else { return nil }
        return try Wrapped.decode(postgresText: text, column: column)
    }
}

extension String: PostgresTextDecodable { public init?(postgresText: String) { self = postgresText } }
extension Int: PostgresTextDecodable { public init?(postgresText: String) { self.init(postgresText) } }
extension Int64: PostgresTextDecodable { public init?(postgresText: String) { self.init(postgresText) } }
extension Int32: PostgresTextDecodable { public init?(postgresText: String) { self.init(postgresText) } }
extension Double: PostgresTextDecodable { public init?(postgresText: String) { self.init(postgresText) } }
extension Bool: PostgresTextDecodable {
    public init?(postgresText: String) {
        switch postgresText {
        case "t", "true": self = true
        case "f", "false": self = false
        default: return nil
        }
    }
}
extension UUID: PostgresTextDecodable { public init?(postgresText: String) { self.init(uuidString: postgresText) } }
extension Date: PostgresTextDecodable {
    public init?(postgresText: String) {
        guard let date = PostgresTimestamp.parse(postgresText) else { return nil }
        self = date
    }
}
extension PostgresJSON: PostgresTextDecodable { public init?(postgresText: String) { self.init(text: postgresText) } }
extension Data: PostgresTextDecodable {
    /// bytea in the server's default hex output (`\x0a1b`).
    public init?(postgresText: String) {
        let bytes = Array(postgresText.utf8)
        guard bytes.count >= 2, bytes[0] == UInt8(ascii: "\\"), bytes[1] == UInt8(ascii: "x"), bytes.count % 2 == 0 else {
            return nil
        }
        func nibble(_ b: UInt8) -> UInt8? {
            switch b {
            case 48...57: return b - 48
            case 97...102: return b - 87
            case 65...70: return b - 55
            default: return nil
            }
        }
        var out = Data(capacity: (bytes.count - 2) / 2)
        var index = 2
        while index < bytes.count {
            guard let high = nibble(bytes[index]), let low = nibble(bytes[index + 1]) else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        self = out
    }
}
extension Array: PostgresDecodable where Element: PostgresDecodable {
    public static func decode(postgresText text: String?, column: String) throws -> Self {
        guard let text else {
            throw PostgresError(kind: .client, message: "column \(column) is NULL, expected an array")
        }
        return try PostgresArrayLiteral.decode(text).map { try Element.decode(postgresText: $0, column: column) }
    }
}

import Foundation

/// A query result copied out of the PGresult (which is freed at once), so it can
/// cross tasks freely. Cells are in text format, row after row in one array (a claim of 1,000
/// jobs is one allocation for its cells, not one per row).
public struct PostgresRows: Sendable, RandomAccessCollection {
    public let columns: [String]
    /// Every cell, row after row: `columns.count` per row.
    let values: [String?]
    /// Rows touched by INSERT/UPDATE/DELETE (PQcmdTuples), or the row count.
    public let affectedRows: Int
    /// The server's command tag (`UPDATE 3`, `COMMIT`, `ROLLBACK`), empty for row results.
    public var commandTag: String = ""
    private let rowCount: Int

    /// A result with no rows (a command's).
    public init(affectedRows: Int, commandTag: String = "") {
        self.init(columns: [], values: [], rowCount: 0, affectedRows: affectedRows, commandTag: commandTag)
    }

    init(columns: [String], values: [String?], rowCount: Int, affectedRows: Int, commandTag: String = "") {
        precondition(values.count == rowCount * columns.count, "cells must fill the rows")
        self.columns = columns
        self.values = values
        self.rowCount = rowCount
        self.affectedRows = affectedRows
        self.commandTag = commandTag
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { rowCount }

    public subscript(index: Int) -> PostgresRow {
        precondition(index >= 0 && index < rowCount, "row \(index) of \(rowCount)")
        return PostgresRow(columns: columns, values: values, base: index * columns.count)
    }
}

public struct PostgresRow: Sendable {
    public let columns: [String]
    /// The result's cells; this row's start at `base`.
    @usableFromInline let values: [String?]
    @usableFromInline let base: Int

    init(columns: [String], values: [String?], base: Int) {
        self.columns = columns
        self.values = values
        self.base = base
    }

    /// This row's cells (a copy).
    public var cells: [String?] { Array(values[base..<base + columns.count]) }

    public func column(named name: String) throws -> Int {
        guard let index = columns.firstIndex(of: name) else {
            throw PostgresError(kind: .client, message: "no column \(name)")
        }
        return index
    }

    /// Inlinable, with the decoders below, so the caller's module specializes the decode for its
    /// type: a claim decodes eight cells per job, and a generic call across modules per cell cost
    /// the worker about 0.2 µs per job.
    @inlinable
    public func decode<T: PostgresDecodable>(_ type: T.Type = T.self, at index: Int) throws -> T {
        guard index >= 0 && index < columns.count else { throw PostgresError(kind: .client, message: "no column #\(index)") }
        return try T.decode(postgresText: values[base + index], column: columns[index])
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
    @inlinable
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
    @inlinable
    public static func decode(postgresText text: String?, column: String) throws -> Self {
        guard text != nil else { return nil }
        return try Wrapped.decode(postgresText: text, column: column)
    }
}

extension String: PostgresTextDecodable { @inlinable public init?(postgresText: String) { self = postgresText } }
extension Int: PostgresTextDecodable { @inlinable public init?(postgresText: String) { self.init(postgresText) } }
extension Int64: PostgresTextDecodable { @inlinable public init?(postgresText: String) { self.init(postgresText) } }
extension Int32: PostgresTextDecodable { @inlinable public init?(postgresText: String) { self.init(postgresText) } }
extension Double: PostgresTextDecodable { @inlinable public init?(postgresText: String) { self.init(postgresText) } }
extension Bool: PostgresTextDecodable {
    @inlinable
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

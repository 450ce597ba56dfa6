import Foundation

/// A query result copied out of the PGresult (which is freed at once), so it can
/// cross tasks freely. Cells are in text format: their bytes one after the other in one array,
/// and where each starts and how long it is in two more (a claim of 1,000 jobs is three
/// allocations for its cells, not one per row or per cell). A cell becomes a Swift value only
/// when decoded, and a number is read from its bytes without a String in between.
public struct PostgresRows: Sendable, RandomAccessCollection {
    public var columns: [String] { storage.columns }
    @usableFromInline let storage: Storage
    /// Rows touched by INSERT/UPDATE/DELETE (PQcmdTuples), or the row count.
    public let affectedRows: Int
    /// The server's command tag (`UPDATE 3`, `COMMIT`, `ROLLBACK`), empty for row results.
    public var commandTag: String = ""
    private let rowCount: Int

    /// The column names and every cell, row after row: `columns.count` per row. One object, so a
    /// row is one reference to it (a claim reads 1,000 rows, each counted in and out once).
    @usableFromInline
    final class Storage: Sendable {
        @usableFromInline let columns: [String]
        /// The cells' bytes, back to back.
        @usableFromInline let bytes: [UInt8]
        /// Per cell: where its bytes start in `bytes`, and how many there are (-1: NULL).
        @usableFromInline let starts: [Int32]
        @usableFromInline let counts: [Int32]

        init(columns: [String], bytes: [UInt8], starts: [Int32], counts: [Int32]) {
            self.columns = columns
            self.bytes = bytes
            self.starts = starts
            self.counts = counts
        }
    }

    /// A result with no rows (a command's).
    public init(affectedRows: Int, commandTag: String = "") {
        self.init(columns: [], bytes: [], starts: [], counts: [], rowCount: 0, affectedRows: affectedRows, commandTag: commandTag)
    }

    init(columns: [String], bytes: [UInt8], starts: [Int32], counts: [Int32], rowCount: Int, affectedRows: Int, commandTag: String = "") {
        precondition(counts.count == rowCount * columns.count && starts.count == counts.count, "cells must fill the rows")
        storage = Storage(columns: columns, bytes: bytes, starts: starts, counts: counts)
        self.rowCount = rowCount
        self.affectedRows = affectedRows
        self.commandTag = commandTag
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { rowCount }

    public subscript(index: Int) -> PostgresRow {
        precondition(index >= 0 && index < rowCount, "row \(index) of \(rowCount)")
        return PostgresRow(storage: storage, base: index * storage.columns.count)
    }
}

public struct PostgresRow: Sendable {
    public var columns: [String] { storage.columns }
    /// The result's columns and cells; this row's start at `base`.
    @usableFromInline let storage: PostgresRows.Storage
    @usableFromInline let base: Int

    init(storage: PostgresRows.Storage, base: Int) {
        self.storage = storage
        self.base = base
    }

    /// This row's cells as text (a copy).
    public var cells: [String?] { columns.indices.map { (try? decode(String?.self, at: $0)) ?? nil } }

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
        let storage = self.storage
        guard index >= 0 && index < storage.columns.count else { throw PostgresError(kind: .client, message: "no column #\(index)") }
        let cell = base + index
        let count = Int(storage.counts[cell])
        guard count >= 0 else { return try T.decode(postgresBytes: nil, column: storage.columns[index]) }
        let start = Int(storage.starts[cell])
        return try storage.bytes.withUnsafeBufferPointer { bytes in
            try T.decode(postgresBytes: UnsafeBufferPointer(rebasing: bytes[start..<start + count]), column: storage.columns[index])
        }
    }

    public func decode<T: PostgresDecodable>(_ type: T.Type = T.self, _ name: String) throws -> T {
        try decode(type, at: try column(named: name))
    }
}

/// A Swift type that can be read from a text-format cell.
public protocol PostgresDecodable: Sendable {
    static func decode(postgresText text: String?, column: String) throws -> Self
    /// The same from the cell's bytes (nil: NULL), valid only during the call. By default through
    /// a String; numbers and row versions read the bytes themselves.
    static func decode(postgresBytes bytes: UnsafeBufferPointer<UInt8>?, column: String) throws -> Self
}

extension PostgresDecodable {
    @inlinable
    public static func decode(postgresBytes bytes: UnsafeBufferPointer<UInt8>?, column: String) throws -> Self {
        try decode(postgresText: bytes.map { String(decoding: $0, as: UTF8.self) }, column: column)
    }
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

    @inlinable
    public static func decode(postgresBytes bytes: UnsafeBufferPointer<UInt8>?, column: String) throws -> Self {
        guard bytes != nil else { return nil }
        return try Wrapped.decode(postgresBytes: bytes, column: column)
    }
}

extension String: PostgresTextDecodable { @inlinable public init?(postgresText: String) { self = postgresText } }
extension Int: PostgresTextDecodable {
    @inlinable public init?(postgresText: String) { self.init(postgresText) }
    @inlinable
    public static func decode(postgresBytes bytes: UnsafeBufferPointer<UInt8>?, column: String) throws -> Int {
        try PostgresInteger.decode(bytes, column: column)
    }
}
extension Int64: PostgresTextDecodable {
    @inlinable public init?(postgresText: String) { self.init(postgresText) }
    @inlinable
    public static func decode(postgresBytes bytes: UnsafeBufferPointer<UInt8>?, column: String) throws -> Int64 {
        try PostgresInteger.decode(bytes, column: column)
    }
}
extension Int32: PostgresTextDecodable {
    @inlinable public init?(postgresText: String) { self.init(postgresText) }
    @inlinable
    public static func decode(postgresBytes bytes: UnsafeBufferPointer<UInt8>?, column: String) throws -> Int32 {
        try PostgresInteger.decode(bytes, column: column)
    }
}

/// A text-format integer cell read from its bytes: an optional sign, then digits.
@usableFromInline
enum PostgresInteger {
    @inlinable
    static func decode<T: FixedWidthInteger>(_ bytes: UnsafeBufferPointer<UInt8>?, column: String) throws -> T {
        guard let bytes else { throw PostgresError(kind: .client, message: "column \(column) is NULL, expected \(T.self)") }
        guard let value = parse(bytes).flatMap({ T(exactly: $0) }) else {
            throw PostgresError(kind: .client, message: "column \(column) is not a \(T.self)")
        }
        return value
    }

    @inlinable
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        var index = 0
        let negative = bytes.first == UInt8(ascii: "-")
        if negative || bytes.first == UInt8(ascii: "+") { index = 1 }
        guard index < bytes.count else { return nil }
        var magnitude: UInt = 0
        while index < bytes.count {
            let digit = bytes[index] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            let (times10, overflowed) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, carried) = times10.addingReportingOverflow(UInt(digit))
            guard !overflowed, !carried else { return nil }
            magnitude = sum
            index += 1
        }
        if negative { return magnitude <= UInt(Int.max) + 1 ? Int(truncatingIfNeeded: 0 &- magnitude) : nil }
        return magnitude <= UInt(Int.max) ? Int(magnitude) : nil
    }
}
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

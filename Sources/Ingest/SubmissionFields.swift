import JSONWire
import Postgres

/// Field rules shared by every submission kind, so each 400 message is worded in one place.
struct SubmissionFields {
    /// Identifiers (user, order, product) longer than this are refused: they are keys, not documents.
    static let maximumIdentifierLength = 256

    let members: [String: JSONValue]

    /// Exactly one JSON object, read by the strict reader every module shares; its refusals
    /// become 400 messages that say what is wrong and at which byte (counted from 1).
    init(json bytes: UnsafeBufferPointer<UInt8>) throws {
        guard bytes.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }) else {
            throw IngestValidationError("malformed JSON: empty document")
        }
        let document: JSONValue
        do {
            document = try JSONValue.parse(bytes)
        } catch {
            throw IngestValidationError(error.offset < bytes.count
                ? "malformed JSON: \(error.reason) at byte \(error.offset + 1)"
                : "malformed JSON: unexpected end of input")
        }
        guard case .object(let members) = document else { throw IngestValidationError("body must be a JSON object") }
        self.members = members
    }

    /// A required, non-empty string (whitespace alone counts as empty).
    func requiredString(_ name: String) throws -> String {
        guard let member = members[name] else { throw IngestValidationError("\(name) is required") }
        guard case .string(let text) = member else { throw IngestValidationError("\(name) must be a string") }
        guard text.contains(where: { !$0.isWhitespace }) else { throw IngestValidationError("\(name) must not be empty") }
        try Self.rejectNUL(text, name)
        return text
    }

    /// An optional string: absent, null and "" all mean "not given" (as in `iap.enqueue_*`, whose
    /// `nullif(…, '')` makes them the same job).
    func optionalString(_ name: String) throws -> String? {
        guard let member = members[name] else { return nil }
        switch member {
        case .null: return nil
        case .string(let text):
            if text.isEmpty { return nil }
            try Self.rejectNUL(text, name)
            return text
        default: throw IngestValidationError("\(name) must be a string")
        }
    }

    func requiredIdentifier(_ name: String) throws -> String {
        try Self.checkLength(try requiredString(name), name)
    }

    func optionalIdentifier(_ name: String) throws -> String? {
        try optionalString(name).map { try Self.checkLength($0, name) }
    }

    private static func checkLength(_ text: String, _ name: String) throws -> String {
        // Unicode scalars, so a multibyte id gets the same allowance as an ASCII one (a scalar is
        // at least one byte: a short id is not counted at all).
        if text.utf8.count > maximumIdentifierLength && text.unicodeScalars.count > maximumIdentifierLength {
            throw IngestValidationError("\(name) must be at most \(maximumIdentifierLength) characters")
        }
        return text
    }

    /// PostgreSQL text cannot hold U+0000; refusing it here keeps it a 400, not a database error.
    private static func rejectNUL(_ text: String, _ name: String) throws {
        if text.containsNUL { throw IngestValidationError("\(name) must not contain NUL characters") }
    }
}

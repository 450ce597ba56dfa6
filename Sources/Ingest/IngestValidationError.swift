/// Why a request body (or an NDJSON line) was refused: the 400 message, word for word.
/// Messages name fields and limits only, never the submitted values (receipts are secrets).
public struct IngestValidationError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}

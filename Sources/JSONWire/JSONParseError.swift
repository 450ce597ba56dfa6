/// Why a document is not JSON, and where: `offset` counts bytes from the start of the input
/// (0 is the first byte; the input's length means it ended too early).
public struct JSONParseError: Error, Equatable, CustomStringConvertible {
    public let reason: String
    public let offset: Int

    public init(_ reason: String, offset: Int) {
        self.reason = reason
        self.offset = offset
    }

    public var description: String { "invalid JSON: \(reason) at byte offset \(offset)" }
}

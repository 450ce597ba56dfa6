/// Checks `Authorization: Bearer <token>` in constant time: every byte of the expected token is
/// compared whatever the presented value is, with no early exit, and a length mismatch still runs
/// the full loop, so response timing does not reveal how much of a guess was right.
public struct BearerTokenAuthenticator: Sendable {
    private let expected: [UInt8]

    /// An empty token would let anyone in; refuse it (the CLI reports it as a configuration error).
    public init(token: String) throws {
        guard !token.isEmpty else { throw IngestConfigurationError.emptyToken }
        expected = Array(token.utf8)
    }

    /// True when `authorizationHeader` is `Bearer <the token>` (scheme case-insensitive).
    public func isAuthorized(_ authorizationHeader: String?) -> Bool {
        guard let header = authorizationHeader else { return false }
        let bytes = Array(header.utf8)
        let scheme = "bearer "
        // The scheme is public: checking it with an early exit reveals nothing about the token.
        guard bytes.count > scheme.utf8.count,
              String(decoding: bytes[0..<scheme.utf8.count], as: UTF8.self).lowercased() == scheme else { return false }
        var start = scheme.utf8.count
        while start < bytes.count, bytes[start] == 0x20 { start += 1 }  // tolerate extra spaces
        return Self.constantTimeEquals(Array(bytes[start...]), expected)
    }

    static func constantTimeEquals(_ presented: [UInt8], _ expected: [UInt8]) -> Bool {
        var difference: UInt8 = presented.count == expected.count ? 0 : 1
        for index in 0..<expected.count {
            // Out-of-range positions compare against a byte the token never ends with, still one step each.
            let byte = index < presented.count ? presented[index] : ~expected[index]
            difference |= byte ^ expected[index]
        }
        return difference == 0
    }
}

public enum IngestConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    case emptyToken

    public var description: String {
        switch self {
        case .emptyToken: "INGEST_TOKEN must not be empty"
        }
    }
}

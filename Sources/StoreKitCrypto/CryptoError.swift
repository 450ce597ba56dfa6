import COpenSSL

/// A libcrypto failure. `operation` names what was attempted; `reason` is OpenSSL's own text
/// (library and reason strings only): neither ever contains key material or token contents.
public struct CryptoError: Error, Sendable, Equatable, CustomStringConvertible {
    public var operation: String
    public var reason: String?

    public init(_ operation: String, reason: String? = nil) {
        self.operation = operation
        self.reason = reason
    }

    /// Takes (and clears) this thread's OpenSSL error queue, so stale entries never leak into a
    /// later, unrelated failure.
    static func openSSL(_ operation: String) -> CryptoError {
        CryptoError(operation, reason: drainErrorQueue())
    }

    static func drainErrorQueue() -> String? {
        var first: String?
        while case let code = ERR_get_error(), code != 0 {
            if first == nil {
                var buffer = [CChar](repeating: 0, count: 256)
                ERR_error_string_n(code, &buffer, buffer.count)
                first = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            }
        }
        return first
    }

    public var description: String { reason.map { "\(operation): \($0)" } ?? operation }
}

/// Keeps secrets out of log lines: registered secret strings are replaced wherever they
/// occur inside a value, and values of well-known sensitive keys are never printed at all.
public struct Redactor: Sendable {
    public static let placeholder = "[redacted]"

    /// Keys whose values are always replaced, compared case-insensitively.
    public static let sensitiveKeys: Set<String> = [
        "password", "receipt_data", "receipt-data", "shared_secret", "token", "authorization",
        "signed_payload", "signedpayload", "jwt", "private_key",
    ]

    /// Secrets shorter than this are ignored: replacing "ab" everywhere would shred logs and
    /// a secret that short is not worth hiding anyway.
    public static let minimumSecretLength = 4

    // UTF-8 bytes, longest first so a secret containing another one is replaced whole.
    private let secrets: [[UInt8]]
    /// Which bytes begin a secret: every other byte of a value is passed over at once.
    private let startsSecret: [Bool]
    private static let placeholderBytes = Array(placeholder.utf8)

    public init(secrets: [String] = []) {
        let usable = Set(secrets.filter { $0.utf8.count >= Self.minimumSecretLength })
        self.secrets = usable.map { Array($0.utf8) }.sorted { $0.count > $1.count }
        var starts = [Bool](repeating: false, count: 256)
        for secret in self.secrets { starts[Int(secret[0])] = true }
        self.startsSecret = starts
    }

    /// Returns a redactor that also hides `more` (e.g. a token loaded after start-up).
    public func adding(secrets more: [String]) -> Redactor {
        Redactor(secrets: secrets.map { String(decoding: $0, as: UTF8.self) } + more)
    }

    /// Whether a sensitive key has this many bytes: a key of another length (most of them) is
    /// not hashed. Every field of every line asks.
    private static let isSensitiveKeyLength: [Bool] = {
        var lengths = [Bool](repeating: false, count: (sensitiveKeys.map(\.utf8.count).max() ?? 0) + 1)
        for key in sensitiveKeys { lengths[key.utf8.count] = true }
        return lengths
    }()

    public static func isSensitiveKey(_ key: String) -> Bool {
        let length = key.utf8.count
        guard length < isSensitiveKeyLength.count, isSensitiveKeyLength[length] else { return false }
        if sensitiveKeys.contains(key) { return true }
        // Runs for every field of every line: only pay for lowercasing when there is an uppercase letter.
        return key.utf8.contains { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }
            && sensitiveKeys.contains(key.lowercased())
    }

    /// The value to log for `key`: a placeholder for sensitive keys, otherwise `value`
    /// with registered secrets cut out.
    public func redact(key: String, value: LogValue) -> LogValue {
        if Self.isSensitiveKey(key) { return .string(Self.placeholder) }
        if case .string(let text) = value, !secrets.isEmpty { return .string(redact(text)) }
        return value
    }

    /// `text` with every occurrence of a registered secret replaced by `[redacted]`.
    public func redact(_ text: String) -> String {
        if secrets.isEmpty { return text }
        var text = text
        // Byte-level matching: a valid UTF-8 secret always matches on scalar boundaries, and it is
        // not fooled by grapheme clustering the way `String.contains` could be.
        return text.withUTF8 { replacingSecrets(in: $0) } ?? text
    }

    /// nil when nothing matched, so the common case allocates nothing.
    private func replacingSecrets(in haystack: UnsafeBufferPointer<UInt8>) -> String? {
        var output: [UInt8] = []
        var copiedUpTo = 0
        var index = 0
        while index < haystack.count {
            let byte = haystack[index]
            guard startsSecret[Int(byte)] else {
                index += 1
                continue
            }
            let hit = secrets.first { secret in
                secret[0] == byte && index + secret.count <= haystack.count
                    && secret.indices.allSatisfy { haystack[index + $0] == secret[$0] }
            }
            guard let hit else {
                index += 1
                continue
            }
            output.append(contentsOf: haystack[copiedUpTo..<index])
            output.append(contentsOf: Self.placeholderBytes)
            index += hit.count
            copiedUpTo = index
        }
        if output.isEmpty { return nil }  // every match appends the placeholder
        output.append(contentsOf: haystack[copiedUpTo...])
        return String(decoding: output, as: UTF8.self)
    }
}

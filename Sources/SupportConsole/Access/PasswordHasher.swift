import COpenSSL
import Foundation

/// Console passwords as OpenSSL scrypt hashes: `scrypt$<log2 N>$<r>$<p>$<salt hex>$<key hex>`.
/// The parameters travel with each hash, so raising the cost later keeps old hashes valid.
public struct PasswordHasher: Sendable {
    public let logN: Int
    public let r: Int
    public let p: Int
    static let keyLength = 32
    static let saltLength = 16

    /// N = 2^15, r = 8, p = 3: one of OWASP's minimum scrypt settings (equal in cost to N = 2^17,
    /// p = 1), with 32 MiB per hash instead of 128 MiB. Hashes made with less work (N = 2^15,
    /// p = 1) still verify and are replaced at the next sign-in.
    public static let standard = PasswordHasher(logN: 15, r: 8, p: 3)

    public init(logN: Int, r: Int, p: Int) {
        self.logN = logN
        self.r = r
        self.p = p
    }

    public func hash(_ password: String) throws -> String {
        var salt = [UInt8](repeating: 0, count: Self.saltLength)
        var generator = SystemRandomNumberGenerator()  // getrandom(2): cryptographically secure
        for index in salt.indices { salt[index] = generator.next() }
        let key = try Self.derive(password, salt: salt, logN: logN, r: r, p: p)
        return ["scrypt", String(logN), String(r), String(p), Hex.encode(salt), Hex.encode(key)].joined(separator: "$")
    }

    /// Constant-time comparison of the derived key; a malformed stored hash never matches.
    public static func verify(_ password: String, against stored: String) -> Bool {
        let parts = stored.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 6, let parameters = parameters(of: stored),
              let salt = Hex.decode(parts[4]), let expected = Hex.decode(parts[5]), expected.count == keyLength,
              let key = try? derive(password, salt: salt, logN: parameters.logN, r: parameters.r, p: parameters.p) else { return false }
        return CRYPTO_memcmp(key, expected, keyLength) == 0
    }

    /// The cost parameters of a stored hash, nil when it is malformed or out of bounds.
    static func parameters(of stored: String) -> PasswordHasher? {
        let parts = stored.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 6, parts[0] == "scrypt", let logN = Int(parts[1]), let r = Int(parts[2]), let p = Int(parts[3]),
              (10...20).contains(logN), (1...32).contains(r), (1...16).contains(p) else { return nil }
        return PasswordHasher(logN: logN, r: r, p: p)
    }

    /// True when `stored` was made with less work than this hasher does: rehash it at sign-in.
    public func isStronger(than stored: String) -> Bool {
        guard let old = Self.parameters(of: stored) else { return false }
        return work > old.work
    }

    private var work: Int { (1 << logN) * r * p }

    /// Spends the same work as a real check, so an unknown user name answers as slowly as a wrong password.
    public func burnEquivalentWork(_ password: String) {
        _ = try? Self.derive(password, salt: [UInt8](repeating: 0, count: Self.saltLength), logN: logN, r: r, p: p)
    }

    static func derive(_ password: String, salt: [UInt8], logN: Int, r: Int, p: Int) throws -> [UInt8] {
        var key = [UInt8](repeating: 0, count: keyLength)
        let n = UInt64(1) << UInt64(logN)
        // scrypt needs 128·N·r·p bytes; OpenSSL refuses more than maxmem, so say how much is meant.
        let maxMemory = 128 * n * UInt64(r) * UInt64(p) + 1024 * 1024
        let status = EVP_PBE_scrypt(password, password.utf8.count,
                                    salt, salt.count, n, UInt64(r), UInt64(p), maxMemory, &key, key.count)
        guard status == 1 else { throw PasswordHashError() }
        return key
    }
}

struct PasswordHashError: Error, CustomStringConvertible {
    var description: String { "OpenSSL scrypt failed" }
}

enum Hex {
    static func encode(_ bytes: [UInt8]) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }

    static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = nibble(digits[index]), let low = nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case 48...57: digit - 48
        case 97...102: digit - 87
        case 65...70: digit - 55
        default: nil
        }
    }

    /// Random bytes as hex, for session ids and CSRF tokens.
    static func random(bytes count: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return encode((0..<count).map { _ in generator.next() })
    }
}

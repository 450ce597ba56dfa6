import Foundation

/// The protected header fields this code reads. Unknown fields are ignored.
public struct JWSHeader: Codable, Sendable, Equatable {
    public var alg: String?
    /// Base64 (not base64url) DER certificates, leaf first (RFC 7515 §4.1.6).
    public var x5c: [String]?
    public var kid: String?
    public var typ: String?

    public init(alg: String?, x5c: [String]? = nil, kid: String? = nil, typ: String? = nil) {
        self.alg = alg
        self.x5c = x5c
        self.kid = kid
        self.typ = typ
    }
}

/// A JWS in compact serialization, split and decoded but NOT verified.
public struct JWSCompact: Sendable {
    /// Anything longer is refused before any decoding (Apple's JWS are a few KiB).
    public static let maximumLength = 256 * 1024

    public var header: JWSHeader
    public var payload: [UInt8]
    public var signature: [UInt8]
    /// `BASE64URL(header) "." BASE64URL(payload)` exactly as received: what the signature covers.
    public var signingInput: [UInt8]

    public enum ParseError: Error, Sendable, Equatable {
        case tooLong, notThreeSegments, badBase64URL(segment: String), headerNotJSON
    }

    public static func parse(_ text: String) throws(ParseError) -> JWSCompact {
        var text = text
        return try text.withUTF8 { utf8 in Result { () throws(ParseError) in try parse(utf8: utf8) } }.get()
    }

    /// Pointer loops rather than Foundation string calls: this runs for every JWS and must stay
    /// cheap in debug builds too.
    private static func parse(utf8 input: UnsafeBufferPointer<UInt8>) throws(ParseError) -> JWSCompact {
        var start = 0, end = input.count
        while start < end, isWhitespace(input[start]) { start += 1 }
        while end > start, isWhitespace(input[end - 1]) { end -= 1 }
        guard end - start <= maximumLength else { throw .tooLong }
        var dots: [Int] = []
        for i in start..<end where input[i] == UInt8(ascii: ".") {
            dots.append(i)
            if dots.count > 2 { throw .notThreeSegments }
        }
        guard dots.count == 2 else { throw .notThreeSegments }
        func segment(_ from: Int, _ to: Int) -> UnsafeBufferPointer<UInt8> {
            UnsafeBufferPointer(rebasing: input[from..<to])
        }
        guard let headerBytes = JWSBase64URL.decode(utf8: segment(start, dots[0])), !headerBytes.isEmpty else {
            throw .badBase64URL(segment: "header")
        }
        guard let payload = JWSBase64URL.decode(utf8: segment(dots[0] + 1, dots[1])) else { throw .badBase64URL(segment: "payload") }
        guard let signature = JWSBase64URL.decode(utf8: segment(dots[1] + 1, end)) else { throw .badBase64URL(segment: "signature") }
        guard let header = try? JSONDecoder().decode(JWSHeader.self, from: Data(headerBytes)) else { throw .headerNotJSON }
        return JWSCompact(header: header, payload: payload, signature: signature, signingInput: Array(segment(start, dots[1])))
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 }

    /// ES256-signs `payload` under `header` (whose `alg` should say ES256).
    public static func sign(header: JWSHeader, payload: [UInt8], key: ES256PrivateKey) throws(CryptoError) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let headerJSON = (try? encoder.encode(header)).map { [UInt8]($0) } ?? []
        let signingInput = JWSBase64URL.encode(headerJSON) + "." + JWSBase64URL.encode(payload)
        let signature = try key.signature(for: Array(signingInput.utf8))
        return signingInput + "." + JWSBase64URL.encode(signature)
    }

    /// Joins arbitrary parts (tests and tamper cases build deliberately wrong tokens with it).
    public static func assemble(headerJSON: [UInt8], payload: [UInt8], signature: [UInt8]) -> String {
        [headerJSON, payload, signature].map { JWSBase64URL.encode($0) }.joined(separator: ".")
    }
}

import Foundation

/// RFC 4648 §5 base64url without padding, as JWS uses it.
public enum JWSBase64URL {
    public static func encode<S: Sequence>(_ bytes: S) -> String where S.Element == UInt8 {
        var text = Array(Data(bytes).base64EncodedData())
        text.withUnsafeMutableBufferPointer { buffer in
            for i in 0..<buffer.count {
                if buffer[i] == UInt8(ascii: "+") { buffer[i] = UInt8(ascii: "-") }
                else if buffer[i] == UInt8(ascii: "/") { buffer[i] = UInt8(ascii: "_") }
            }
        }
        while text.last == UInt8(ascii: "=") { text.removeLast() }
        return String(decoding: text, as: UTF8.self)
    }

    /// nil for anything outside the base64url alphabet: standard `+`, `/`, padding and whitespace
    /// are refused, so a token has one spelling.
    public static func decode<S: StringProtocol>(_ text: S) -> [UInt8]? {
        var text = String(text)
        return text.withUTF8 { decode(utf8: $0) }
    }

    /// Translates to standard base64 with a plain pointer loop (cheap even in debug builds, and
    /// this runs over every JWS header), then lets Foundation decode.
    static func decode(utf8 input: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        let count = input.count
        guard count % 4 != 1 else { return nil }
        var standard = [UInt8](repeating: UInt8(ascii: "="), count: (count + 3) / 4 * 4)
        let valid = standard.withUnsafeMutableBufferPointer { output -> Bool in
            for i in 0..<count {
                let byte = input[i]
                if (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39) {
                    output[i] = byte
                } else if byte == UInt8(ascii: "-") {
                    output[i] = UInt8(ascii: "+")
                } else if byte == UInt8(ascii: "_") {
                    output[i] = UInt8(ascii: "/")
                } else {
                    return false
                }
            }
            return true
        }
        guard valid, let data = Data(base64Encoded: Data(standard)) else { return nil }
        return [UInt8](data)
    }
}

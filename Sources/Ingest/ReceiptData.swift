/// The `receipt_data` rules: standard base64 (A–Z a–z 0–9 + /, `=` padding, length a multiple of 4).
/// iOS encodes receipts with line breaks, so CR and LF are removed first; the stripped form is stored,
/// which also makes the same receipt with and without line breaks the same job.
enum ReceiptData {
    static func normalize(_ text: String) throws -> String {
        var bytes = Array(text.utf8)
        if bytes.contains(where: { $0 == 0x0D || $0 == 0x0A }) {
            bytes.removeAll { $0 == 0x0D || $0 == 0x0A }
            guard !bytes.isEmpty else { throw IngestValidationError("receipt_data must not be empty") }
        }
        guard isStandardBase64(bytes) else { throw IngestValidationError("receipt_data must be base64") }
        return bytes.count == text.utf8.count ? text : String(decoding: bytes, as: UTF8.self)
    }

    static func isStandardBase64(_ bytes: [UInt8]) -> Bool {
        guard !bytes.isEmpty, bytes.count % 4 == 0 else { return false }
        var padding = 0
        if bytes[bytes.count - 1] == UInt8(ascii: "=") { padding += 1 }
        if bytes[bytes.count - 2] == UInt8(ascii: "=") { padding += 1 }
        for byte in bytes[0..<(bytes.count - padding)] {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "/"):
                continue
            default:
                return false
            }
        }
        return true
    }
}

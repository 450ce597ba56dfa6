import Foundation
import JSONWire

/// Apple's JSON is loosely typed: `in_app` values are strings, `status` is usually a number but
/// proxies and old endpoints have sent strings. These readers accept either spelling and treat
/// a value of the wrong shape as absent, so one odd field never sinks a whole response. The
/// same rules serve Codable payloads and `JSONValue` documents (the verifyReceipt hot path).
enum LenientText {
    /// A number as text: whole numbers without a fraction, as Apple's string fields write them.
    static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e18 ? String(Int64(value)) : String(value)
    }

    /// An integer given as a number or as a numeric string.
    static func int(_ text: String?) -> Int? {
        text.flatMap { Int($0.trimmingWhitespace) }
    }

    /// true/false, "true"/"false", 1/0 or "1"/"0".
    static func bool(_ text: String?) -> Bool? {
        switch text?.lowercased() {
        case "true", "1": true
        case "false", "0": false
        default: nil
        }
    }
}

extension KeyedDecodingContainer {
    /// A string, or a number / bool rendered as text.
    func lenientString(_ key: Key) -> String? {
        // Absent and null end here, before four failed typed reads each build a DecodingError.
        guard contains(key), (try? decodeNil(forKey: key)) == false else { return nil }
        if let s = try? decode(String.self, forKey: key) { return s }
        if let i = try? decodeIfPresent(Int64.self, forKey: key) { return String(i) }
        if let d = try? decodeIfPresent(Double.self, forKey: key) { return LenientText.number(d) }
        if let b = try? decodeIfPresent(Bool.self, forKey: key) { return String(b) }
        return nil
    }

    func lenientInt(_ key: Key) -> Int? { LenientText.int(lenientString(key)) }
    func lenientBool(_ key: Key) -> Bool? { LenientText.bool(lenientString(key)) }
}

extension JSONValue {
    /// A string, or a number / bool rendered as text; null, arrays and objects are absent.
    var lenientText: String? {
        switch self {
        case .string(let text): text
        case .number(let text):
            // JSONDecoder's order: an exact Int64 first, then a finite double.
            int64Value.map { String($0) } ?? Double(text).flatMap { $0.isFinite ? LenientText.number($0) : nil }
        case .bool(let value): String(value)
        case .null, .array, .object: nil
        }
    }

    func lenientString(_ key: String) -> String? { self[key]?.lenientText }
    func lenientInt(_ key: String) -> Int? { LenientText.int(lenientString(key)) }
    func lenientBool(_ key: String) -> Bool? { LenientText.bool(lenientString(key)) }
}

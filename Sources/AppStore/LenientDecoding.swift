import Foundation

/// Apple's JSON is loosely typed: `in_app` values are strings, `status` is usually a number but
/// proxies and old endpoints have sent strings. These readers accept either spelling and treat
/// a value of the wrong shape as absent, so one odd field never sinks a whole response.
extension KeyedDecodingContainer {
    /// A string, or a number / bool rendered as text.
    func lenientString(_ key: Key) -> String? {
        // Absent and null end here, before four failed typed reads each build a DecodingError.
        guard contains(key), (try? decodeNil(forKey: key)) == false else { return nil }
        if let s = try? decode(String.self, forKey: key) { return s }
        if let i = try? decodeIfPresent(Int64.self, forKey: key) { return String(i) }
        if let d = try? decodeIfPresent(Double.self, forKey: key) {
            return d == d.rounded() && abs(d) < 1e18 ? String(Int64(d)) : String(d)
        }
        if let b = try? decodeIfPresent(Bool.self, forKey: key) { return String(b) }
        return nil
    }

    /// An integer given as a number or as a numeric string.
    func lenientInt(_ key: Key) -> Int? {
        lenientString(key).flatMap { Int($0.trimmingWhitespace) }
    }

    /// true/false, "true"/"false", 1/0 or "1"/"0".
    func lenientBool(_ key: Key) -> Bool? {
        switch lenientString(key)?.lowercased() {
        case "true", "1": true
        case "false", "0": false
        default: nil
        }
    }
}

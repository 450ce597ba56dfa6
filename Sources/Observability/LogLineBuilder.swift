import UTCTime
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Builds one log line (without trailing newline) in logfmt or JSON.
/// Appends straight into one `String` so a line costs a single growing buffer.
struct LogLineBuilder {
    private let format: LogFormat
    private var line: String
    private var isFirstField = true

    init(format: LogFormat, timestamp: String, level: LogLevel, event: String) {
        self.format = format
        line = ""
        line.reserveCapacity(160)
        if format == .json { line.append("{") }
        append(key: "ts", value: .string(timestamp))
        append(key: "level", value: .string(level.rawValue))
        append(key: "event", value: .string(event))
    }

    mutating func append(key: String, value: LogValue) {
        if !isFirstField { line.append(format == .json ? "," : " ") }
        isFirstField = false
        switch format {
        case .logfmt:
            appendLogfmtKey(key)
            line.append("=")
            let text = value.description
            if logfmtNeedsQuotes(text) { appendQuoted(text, into: &line) } else { line.append(text) }
        case .json:
            appendQuoted(key, into: &line)
            line.append(":")
            switch value {
            case .string(let s): appendQuoted(s, into: &line)
            case .int(let i): line.append(String(i))
            case .bool(let b): line.append(b ? "true" : "false")
            case .double(let d) where d.isFinite: line.append(formatNumber(d))
            case .double(let d): appendQuoted(formatNumber(d), into: &line)  // JSON has no NaN/Inf
            }
        }
    }

    consuming func finish() -> String {
        if format == .json { line.append("}") }
        return line
    }

    /// Keys are normally identifiers; anything that would break `key=value` parsing becomes `_`.
    private mutating func appendLogfmtKey(_ key: String) {
        if key.isEmpty { line.append("_"); return }
        for scalar in key.unicodeScalars {
            let bad = scalar.value <= 0x20 || scalar.value == 0x7F || scalar == "=" || scalar == "\""
            line.unicodeScalars.append(bad ? "_" : scalar)
        }
    }
}

private func logfmtNeedsQuotes(_ text: String) -> Bool {
    text.isEmpty || text.utf8.contains { $0 <= 0x20 || $0 == 0x7F || $0 == UInt8(ascii: "=") || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }
}

/// `"text"` with JSON string escaping. logfmt uses the very same rules inside its quotes,
/// so one escaper serves both formats.
func appendQuoted(_ text: String, into out: inout String) {
    out.append("\"")
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out.append("\\\"")
        case "\\": out.append("\\\\")
        case "\n": out.append("\\n")
        case "\r": out.append("\\r")
        case "\t": out.append("\\t")
        case _ where scalar.value < 0x20 || scalar.value == 0x7F:
            out.append("\\u00")
            out.append(hexDigit(scalar.value >> 4))
            out.append(hexDigit(scalar.value & 0xF))
        default: out.unicodeScalars.append(scalar)
        }
    }
    out.append("\"")
}

private func hexDigit(_ nibble: UInt32) -> Character {
    Character(Unicode.Scalar(UInt8(nibble < 10 ? 0x30 + nibble : 0x41 + nibble - 10)))
}

/// `2026-11-21T04:10:57.123Z`.
func utcTimestamp(seconds: Int, nanoseconds: Int) -> String {
    UTCDateTime(seconds: seconds, nanoseconds: nanoseconds).text(fractionDigits: 3)
}

/// Current wall-clock time as an ISO-8601 UTC timestamp with milliseconds.
func currentUTCTimestamp() -> String {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return utcTimestamp(seconds: Int(now.tv_sec), nanoseconds: Int(now.tv_nsec))
}

import JSONWire
import UTCTime
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Builds one log line (without trailing newline) in logfmt or JSON.
/// Appends straight into one byte buffer so a line costs a single growing allocation.
struct LogLineBuilder {
    private let format: LogFormat
    private var line: [UInt8] = []
    private var isFirstField = true

    init(format: LogFormat, timestamp: String, level: LogLevel, event: String) {
        self.format = format
        line.reserveCapacity(256) // a job_finished line is 200–250 bytes: one allocation, not a second to grow it
        if format == .json { line.append(UInt8(ascii: "{")) }
        append(key: "ts", value: .string(timestamp))
        append(key: "level", value: .string(level.rawValue))
        append(key: "event", value: .string(event))
    }

    mutating func append(key: String, value: LogValue) {
        if !isFirstField { line.append(format == .json ? UInt8(ascii: ",") : UInt8(ascii: " ")) }
        isFirstField = false
        switch format {
        case .logfmt:
            appendLogfmtKey(key)
            line.append(UInt8(ascii: "="))
            switch value {
            case .int(let i): JSONWriter.appendDecimal(i, to: &line)  // digits and a sign: never quoted
            case .bool(let b): line.append(contentsOf: (b ? "true" : "false").utf8)
            case .string(let text): appendLogfmtValue(text)
            case .double: appendLogfmtValue(value.description)
            }
        case .json:
            JSONWriter.appendQuoted(key, to: &line)
            line.append(UInt8(ascii: ":"))
            switch value {
            case .string(let s): JSONWriter.appendQuoted(s, to: &line)
            case .int(let i): JSONWriter.appendDecimal(i, to: &line)
            case .bool(let b): line.append(contentsOf: (b ? "true" : "false").utf8)
            case .double(let d) where d.isFinite: line.append(contentsOf: formatNumber(d).utf8)
            case .double(let d): JSONWriter.appendQuoted(formatNumber(d), to: &line)  // JSON has no NaN/Inf
            }
        }
    }

    consuming func finish() -> String {
        if format == .json { line.append(UInt8(ascii: "}")) }
        return String(decoding: line, as: UTF8.self)
    }

    /// Keys are normally identifiers; anything that would break `key=value` parsing becomes `_`.
    /// Every such byte is ASCII, so bytes of non-ASCII characters pass unchanged.
    /// Every key and value of every line is scanned: its bytes are read in place and, in the
    /// common case, copied whole.
    private mutating func appendLogfmtKey(_ key: String) {
        var key = key
        key.withUTF8 { bytes in
            if bytes.isEmpty { return line.append(UInt8(ascii: "_")) }
            // Keys are the program's own identifiers: copied whole unless one needs mending.
            if !bytes.contains(where: isBadInLogfmtKey) { return line.append(contentsOf: bytes) }
            for byte in bytes { line.append(isBadInLogfmtKey(byte) ? UInt8(ascii: "_") : byte) }
        }
    }

    /// logfmt quotes with the very same rules as JSON strings: one escaper serves both.
    private mutating func appendLogfmtValue(_ text: String) {
        var text = text
        let plain = text.withUTF8 { bytes in
            guard !bytes.isEmpty, !bytes.contains(where: { isBadInLogfmtKey($0) || $0 == UInt8(ascii: "\\") }) else { return false }
            line.append(contentsOf: bytes)
            return true
        }
        if !plain { JSONWriter.appendQuoted(text, to: &line) }
    }
}

@inline(__always)
private func isBadInLogfmtKey(_ byte: UInt8) -> Bool {
    byte <= 0x20 || byte == 0x7F || byte == UInt8(ascii: "=") || byte == UInt8(ascii: "\"")
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

import Foundation

/// The request/response head grammar shared by the server (requests) and the client (responses):
/// a start line and header fields, terminated by an empty line (RFC 9112 §2–5).
enum HTTPHead {
    struct Malformed: Error { let reason: String }

    private static let cr = UInt8(ascii: "\r"), lf = UInt8(ascii: "\n")

    /// Index just past the CRLFCRLF ending the head, or nil. Resumable: pass the previous
    /// `buffer.count` as `from` so slow, byte-at-a-time clients do not cost quadratic scans.
    static func findEnd(_ buffer: [UInt8], from: Int = 0) -> Int? {
        var i = max(0, from - 3)
        while i + 3 < buffer.count {
            if buffer[i + 3] != lf { i += 1; continue }  // cheap skip on the common case
            if buffer[i] == cr, buffer[i + 1] == lf, buffer[i + 2] == cr { return i + 4 }
            i += 1
        }
        return nil
    }

    /// Parses `head` (which ends in CRLFCRLF) into its start line and header fields.
    static func parse(_ head: ArraySlice<UInt8>) throws(Malformed) -> (startLine: String, headers: HTTPHeaderFields) {
        var lines: [ArraySlice<UInt8>] = []
        var start = head.startIndex
        var i = head.startIndex
        while i + 1 < head.endIndex {
            if head[i] == cr && head[i + 1] == lf {
                lines.append(head[start..<i])
                i += 2
                start = i
            } else {
                i += 1
            }
        }
        // The terminating empty line is the last one; drop it.
        guard let first = lines.first, !first.isEmpty, lines.last?.isEmpty == true else {
            throw Malformed(reason: "missing start line")
        }
        guard !first.contains(cr), !first.contains(lf) else { throw Malformed(reason: "bare CR or LF") }
        var headers: HTTPHeaderFields = []
        headers.reserveCapacity(lines.count - 2)
        for line in lines.dropFirst().dropLast() {
            headers.append(try parseField(line))
        }
        return (String(decoding: first, as: UTF8.self), headers)
    }

    private static func parseField(_ line: ArraySlice<UInt8>) throws(Malformed) -> (name: String, value: String) {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > line.startIndex else {
            throw Malformed(reason: "malformed header line")
        }
        let name = line[line.startIndex..<colon]
        // Rejects obs-fold (leading whitespace) and "Name : value" (request smuggling vectors).
        guard name.allSatisfy(isTokenChar) else { throw Malformed(reason: "invalid header name") }
        var value = line[(colon + 1)...]
        while let f = value.first, f == 0x20 || f == 0x09 { value = value.dropFirst() }
        while let l = value.last, l == 0x20 || l == 0x09 { value = value.dropLast() }
        guard !value.contains(where: { $0 == 0 || $0 == cr || $0 == lf }) else {
            throw Malformed(reason: "invalid header value")
        }
        return (String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self))
    }

    /// RFC 9110 tchar. Spelled out: every header name of every request and response is checked
    /// byte by byte, so the check allocates nothing.
    static func isTokenChar(_ c: UInt8) -> Bool {
        switch c {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
             UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
             UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// Content-Length, if present. Repeated values must agree; anything but digits is malformed.
    /// Byte by byte: every request and response head goes through here.
    static func contentLength(_ headers: HTTPHeaderFields) throws(Malformed) -> Int? {
        var result: Int?
        for field in headers where field.name.equalsIgnoringASCIICase("Content-Length") {
            for part in field.value.utf8.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
                let digits = trimmed(part)
                guard !digits.isEmpty, digits.count <= 18, digits.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
                    throw Malformed(reason: "invalid Content-Length")
                }
                let n = digits.reduce(0) { $0 * 10 + Int($1 - 48) }
                guard result == nil || result == n else { throw Malformed(reason: "invalid Content-Length") }
                result = n
            }
        }
        return result
    }

    /// Whether a comma-separated header (Connection, Transfer-Encoding) lists `token`.
    static func hasToken(_ headers: HTTPHeaderFields, _ name: String, _ token: String) -> Bool {
        headers.contains { field in
            field.name.equalsIgnoringASCIICase(name) &&
                field.value.utf8.split(separator: UInt8(ascii: ",")).contains {
                    Substring(trimmed($0)).equalsIgnoringASCIICase(token)
                }
        }
    }

    /// `bytes` without leading and trailing spaces and tabs.
    private static func trimmed<Bytes: BidirectionalCollection<UInt8>>(_ bytes: Bytes) -> Bytes.SubSequence {
        var part = bytes[...]
        while let f = part.first, f == 0x20 || f == 0x09 { part = part.dropFirst() }
        while let l = part.last, l == 0x20 || l == 0x09 { part = part.dropLast() }
        return part
    }

    static func has(_ headers: HTTPHeaderFields, _ name: String) -> Bool { headers.firstValue(name) != nil }
}

extension StringProtocol {
    var trimmingWhitespace: String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return String(s)
    }
}

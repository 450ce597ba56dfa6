/// Follows the server-to-client half of a PostgreSQL connection message by message (a type
/// byte, then a 4-byte length that counts itself), so the fault proxy can stop right before
/// one message: the `CommandComplete` whose tag is `COMMIT`. The server has committed by then;
/// the client never learns it.
struct BackendMessageScanner {
    /// `CommandComplete` ('C'), length 11, tag "COMMIT\0".
    static let commitComplete: [UInt8] = [UInt8(ascii: "C"), 0, 0, 0, 11] + Array("COMMIT".utf8) + [0]

    /// Bytes of the current message still to come in later reads.
    private var toSkip = 0
    private var started = false
    /// An encrypted stream (the server accepted SSL or GSS encryption): not followed.
    private(set) var blind = false

    /// Looks at the first `count` of `bytes`: the bytes held back by the previous call followed
    /// by what was just read. Returns how many may be forwarded now, and whether a COMMIT's `CommandComplete`
    /// begins right after them that `cut()` chose to cut. When it does not, the bytes after
    /// `forward` are an unfinished message header (or the start of a `CommandComplete` too short
    /// to tell), to be held back and passed again with the next read.
    mutating func scan(_ bytes: [UInt8], count: Int, cut: () -> Bool) -> (forward: Int, commitFollows: Bool) {
        if blind { return (count, false) }
        var index = min(toSkip, count)
        toSkip -= index
        while index < count {
            if !started {
                // The one-byte answers to SSLRequest and GSSENCRequest come before any message:
                // 'N' (no) lets the plain protocol go on; 'S' or 'G' (yes) encrypts the rest.
                switch bytes[index] {
                case UInt8(ascii: "N"):
                    index += 1
                    continue
                case UInt8(ascii: "S"), UInt8(ascii: "G"):
                    blind = true
                    return (count, false)
                default:
                    started = true
                }
            }
            guard count - index >= 5 else { return (index, false) }
            let length = bytes[(index + 1)..<(index + 5)].reduce(0) { $0 << 8 | Int($1) }
            guard length >= 4 else {
                blind = true
                return (count, false)
            }
            if bytes[index] == UInt8(ascii: "C"), length == 11 {
                guard count - index >= Self.commitComplete.count else { return (index, false) }
                if bytes[index..<(index + Self.commitComplete.count)].elementsEqual(Self.commitComplete), cut() {
                    return (index, true)
                }
            }
            let end = index + 1 + length
            if end <= count {
                index = end
            } else {
                toSkip = end - count
                index = count
            }
        }
        return (count, false)
    }
}

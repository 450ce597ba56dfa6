extension StringProtocol {
    /// Without leading and trailing ASCII whitespace (space, tab, LF, VT, FF, CR), trimmed on the
    /// UTF-8 bytes: Foundation's `trimmingCharacters(in:)` bridges through NSString and walking
    /// Characters is slow, and this runs on several fields per receipt verified and per receipt
    /// the simulator answers. Public so the simulator trims the same way.
    public var trimmingWhitespace: String {
        let text = Substring(self), utf8 = text.utf8
        let isSpace = { (byte: UInt8) in byte == 0x20 || (0x09...0x0D).contains(byte) }
        guard let first = utf8.firstIndex(where: { !isSpace($0) }),
              let last = utf8.lastIndex(where: { !isSpace($0) }) else { return "" }
        // Both ends sit on scalar boundaries: only ASCII bytes were skipped.
        return String(text[first..<utf8.index(after: last)])
    }
}

extension StringProtocol {
    /// Without leading and trailing whitespace, in plain Swift: Foundation's
    /// `trimmingCharacters(in:)` bridges through NSString, which showed in the profile of
    /// every receipt verified (several fields per transaction).
    var trimmingWhitespace: String {
        guard let first = firstIndex(where: { !$0.isWhitespace }),
              let last = lastIndex(where: { !$0.isWhitespace }) else { return "" }
        return String(self[first...last])
    }
}

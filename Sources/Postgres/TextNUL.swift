import Foundation

extension String {
    /// Whether the text holds U+0000, which PostgreSQL's text cannot: `memchr` over the UTF-8
    /// bytes where they are contiguous (every native string), not a byte-at-a-time iteration,
    /// since each receipt of a group commit is checked on its way in.
    public var containsNUL: Bool {
        utf8.withContiguousStorageIfAvailable { bytes in
            guard let base = bytes.baseAddress, !bytes.isEmpty else { return false }
            return memchr(base, 0, bytes.count) != nil
        } ?? utf8.contains(0)
    }
}

#if canImport(Glibc)
import Glibc
#endif

/// The proxies whose `X-Forwarded-For` (and trusted sign-in header) the console believes:
/// addresses, or CIDR ranges (`10.0.0.0/8`, `fd00::/8`) for an Ingress controller whose pods
/// come and go. Addresses are compared as bytes, so `::ffff:10.1.2.3` is not `10.1.2.3`.
public struct TrustedProxies: Sendable, Equatable {
    struct Range: Sendable, Equatable {
        let network: [UInt8]
        let prefixLength: Int

        func contains(_ address: [UInt8]) -> Bool {
            guard address.count == network.count else { return false }
            var bits = prefixLength
            for (a, n) in zip(address, network) where bits > 0 {
                let mask: UInt8 = bits >= 8 ? 0xFF : ~(0xFF >> UInt8(bits))
                if a & mask != n & mask { return false }
                bits -= 8
            }
            return true
        }
    }

    let ranges: [Range]

    public static let none = TrustedProxies(ranges: [])

    init(ranges: [Range]) { self.ranges = ranges }

    /// Each entry an address or `address/prefix`; throws naming the first one that is neither.
    public init(_ entries: [String]) throws {
        ranges = try entries.map { entry in
            let parts = entry.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            guard let address = Self.bytes(parts[0]) else { throw TrustedProxyError(entry: entry) }
            guard parts.count == 2 else { return Range(network: address, prefixLength: address.count * 8) }
            guard let prefix = Int(parts[1]), (0...(address.count * 8)).contains(prefix) else { throw TrustedProxyError(entry: entry) }
            return Range(network: address, prefixLength: prefix)
        }
    }

    public var isEmpty: Bool { ranges.isEmpty }

    public func contains(_ address: String) -> Bool {
        guard let bytes = Self.bytes(address) else { return false }
        return ranges.contains { $0.contains(bytes) }
    }

    /// The 4 or 16 bytes of an IPv4 or IPv6 address; nil for anything else.
    static func bytes(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }
}

/// For configurations written in code (tests, the demo): a literal that is not an address or a
/// range is a programmer's error.
extension TrustedProxies: ExpressibleByArrayLiteral {
    public init(arrayLiteral elements: String...) {
        do { try self.init(elements) } catch { preconditionFailure("\(error)") }
    }
}

public struct TrustedProxyError: Error, CustomStringConvertible {
    public let entry: String
    public var description: String { "'\(entry)' is neither an IP address nor a CIDR range (e.g. 10.0.0.0/8)" }
}

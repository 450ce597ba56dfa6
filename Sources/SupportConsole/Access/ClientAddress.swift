import HTTP

/// The address a request came from. Behind a proxy every peer is the proxy, so the client is
/// read from `X-Forwarded-For`, but only on connections from a configured trusted proxy: anyone
/// else could write any address there. The list is read from the right (each proxy appends the
/// peer it saw), skipping trusted proxies; the first other entry is the client.
enum ClientAddress {
    static func of(_ request: HTTPRequest, trustedProxies: TrustedProxies) -> String {
        let peer = request.remoteAddress ?? "unknown"
        guard trustedProxies.contains(peer), let forwarded = request.header("X-Forwarded-For") else { return peer }
        let hops = forwarded.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard let client = hops.reversed().first(where: { !trustedProxies.contains($0) }) ?? hops.first else { return peer }
        return RequestOriginCheck.isIPLiteral(client) ? client : peer
    }
}

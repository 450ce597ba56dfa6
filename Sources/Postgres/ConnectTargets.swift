import CLibPQ

/// The hosts of a conninfo, one connection attempt each: libpq's own multi-host
/// connect cannot be bounded per host when driven non-blocking (the caller's deadline covers
/// the whole list, so a first host that accepts TCP and never answers uses it up), so the
/// list is split here and each host is opened on its own with its own deadline, as libpq's
/// `connect_timeout` documents ("applies separately to each host name or IP address").
struct ConnectTargets {
    /// One entry of the host list: the keywords that pin libpq to it.
    struct Host: Hashable {
        /// `host`: a name, an IP address, a Unix-socket folder, or empty (libpq's default).
        var host: String
        /// `hostaddr`, when the user gave one for this host.
        var hostaddr: String
        /// `port`, or empty (libpq's default).
        var port: String

        /// A name that libpq would resolve with a blocking lookup: resolved by us, under the deadline.
        var needsLookup: Bool {
            hostaddr.isEmpty && !host.isEmpty && !host.hasPrefix("/") && !host.hasPrefix("@") && !HostLookup.isNumeric(host)
        }

        /// Where this host is, for messages (never the password).
        var label: String {
            let name = host.isEmpty ? (hostaddr.isEmpty ? "default host" : hostaddr) : host
            return port.isEmpty ? name : "\(name):\(port)"
        }

        /// Keywords placed after the expanded conninfo, so they override its lists.
        func overrides(address: String?) -> [(String, String)] {
            var pairs: [(String, String)] = []
            if !host.isEmpty { pairs.append(("host", host)) }
            if let address = address ?? (hostaddr.isEmpty ? nil : hostaddr) { pairs.append(("hostaddr", address)) }
            if !port.isEmpty { pairs.append(("port", port)) }
            return pairs
        }
    }

    let hosts: [Host]

    /// The host list of `conninfo`; one empty entry when it names none (libpq's defaults and
    /// PGHOST apply). A conninfo libpq cannot parse yields one empty entry: the connect
    /// attempt then reports libpq's own error.
    init(conninfo: String) {
        var values: [String: String] = [:]
        if let options = PQconninfoParse(conninfo, nil) {
            var option = options
            while let keyword = option.pointee.keyword {
                if let value = option.pointee.val { values[String(cString: keyword)] = String(cString: value) }
                option += 1
            }
            PQconninfoFree(options)
        }
        hosts = Self.split(host: values["host"] ?? "", hostaddr: values["hostaddr"] ?? "", port: values["port"] ?? "")
    }

    /// libpq's list rules: `host` and `hostaddr` lists of equal length (or one absent); `port`
    /// one value for all hosts or one per host.
    static func split(host: String, hostaddr: String, port: String) -> [Host] {
        let names = host.isEmpty ? [] : host.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        let addresses = hostaddr.isEmpty ? [] : hostaddr.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        let ports = port.isEmpty ? [] : port.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        let count = max(1, names.count, addresses.count)
        return (0..<count).map { index in
            Host(host: index < names.count ? names[index].trimmed : "",
                 hostaddr: index < addresses.count ? addresses[index].trimmed : "",
                 port: ports.count == 1 ? ports[0].trimmed : (index < ports.count ? ports[index].trimmed : ""))
        }
    }
}

private extension String {
    var trimmed: String { String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed()) }
}

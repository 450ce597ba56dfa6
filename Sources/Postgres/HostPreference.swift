import Foundation
import Synchronization

/// Which host of a multi-host conninfo a pool tries first, and which last. Without it every new
/// session starts at the first host: with that host hung, every reconnect (and, since a broken
/// connection retires the idle pool, every slot) pays its whole connect deadline again. Here the
/// host that last accepted a session (and matched `target_session_attrs`) goes first, and a host
/// that failed to accept one (timed out, refused, a standby where a primary is wanted) goes last
/// for a cool-down: still tried when all the others failed, so this memory can never keep a
/// process from a host that answers. The list's own order holds otherwise.
final class HostPreference: Sendable {
    typealias Host = ConnectTargets.Host

    private struct State {
        var preferred: Host?
        /// When (monotonic nanoseconds) each host that failed may be tried in the list's order again.
        var coolingUntil: [Host: UInt64] = [:]
    }

    private let state = Mutex(State())
    let coolDownNanoseconds: UInt64
    private let applicationName: String
    private let changed: (@Sendable (PostgresPreferredHost) -> Void)?

    /// Long enough that a hung host is not paid for again on every reconnect, short enough that
    /// a host that came back is back in order soon: a few connect deadlines, at most 5 minutes.
    static func coolDown(connectTimeout: Double) -> Double {
        connectTimeout.isFinite ? min(300, max(0, 3 * connectTimeout)) : 300
    }

    init(coolDown seconds: Double, applicationName: String = "", changed: (@Sendable (PostgresPreferredHost) -> Void)? = nil) {
        coolDownNanoseconds = UInt64(max(0, min(seconds, 86_400)) * 1e9)
        self.applicationName = applicationName
        self.changed = changed
    }

    convenience init(configuration: PostgresConfiguration) {
        self.init(coolDown: Self.coolDown(connectTimeout: configuration.connectTimeout),
                  applicationName: configuration.applicationName, changed: configuration.preferredHostHandler)
    }

    /// `hosts` in the order to try them now.
    func order(_ hosts: [Host], now: UInt64 = DispatchTime.now().uptimeNanoseconds) -> [Host] {
        state.withLock { state in
            var first: [Host] = [], cooling: [Host] = []
            for host in hosts {
                if let until = state.coolingUntil[host], until > now {
                    cooling.append(host)
                } else if host == state.preferred {
                    first.insert(host, at: 0)
                } else {
                    first.append(host)
                }
            }
            return first + cooling
        }
    }

    /// `host` accepted a session: it goes first from now on.
    func accepted(_ host: Host, among hosts: [Host], now: UInt64 = DispatchTime.now().uptimeNanoseconds) {
        let change = state.withLock { state -> PostgresPreferredHost? in
            state.coolingUntil[host] = nil
            state.coolingUntil = state.coolingUntil.filter { $0.value > now }
            guard state.preferred != host else { return nil }
            let previous = state.preferred
            state.preferred = host
            return PostgresPreferredHost(host: host.label, previous: previous?.label,
                                         coolingDown: hosts.filter { state.coolingUntil[$0] != nil }.map(\.label),
                                         applicationName: applicationName)
        }
        if let change, hosts.count > 1 { changed?(change) }
    }

    /// `host` failed to accept a session: it goes last for the cool-down, even if it was preferred.
    func failed(_ host: Host, now: UInt64 = DispatchTime.now().uptimeNanoseconds) {
        state.withLock { $0.coolingUntil[host] = now &+ coolDownNanoseconds }
    }
}

/// The host a pool now opens its sessions on first, as it changes (a multi-host conninfo only).
public struct PostgresPreferredHost: Sendable, Equatable {
    /// `host:port` of the host that accepted the latest session.
    public let host: String
    /// The host preferred before, nil for the first session.
    public let previous: String?
    /// Hosts that failed to accept a session recently: tried only after every other one.
    public let coolingDown: [String]
    /// The `application_name` of the pool's sessions: which pool of the process this is.
    public let applicationName: String
}

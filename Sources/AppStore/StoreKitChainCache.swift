import Foundation
import StoreKitCrypto
import Synchronization

/// Leaf keys of chains already verified, keyed by the exact x5c strings, so a burst of JWS from
/// the same Apple leaf does not rebuild the chain each time. A hit still honours the date being
/// checked: each entry remembers the span in which every certificate of its chain is valid.
final class StoreKitChainCache: Sendable {
    private struct Entry {
        let leafKey: ES256PublicKey
        let validity: ClosedRange<Date>
        let expires: ContinuousClock.Instant
        let inserted: UInt64
    }

    private struct State {
        var entries: [[String]: Entry] = [:]
        var insertions: UInt64 = 0
    }

    private let capacity: Int
    private let lifetime: Duration
    private let state = Mutex(State())

    init(capacity: Int, lifetime: Duration) {
        self.capacity = max(0, capacity)
        self.lifetime = lifetime
    }

    func leafKey(for x5c: [String], at date: Date) -> ES256PublicKey? {
        guard capacity > 0 else { return nil }
        let now = ContinuousClock.now
        return state.withLock { s -> ES256PublicKey? in
            guard let entry = s.entries[x5c] else { return nil }
            guard entry.expires > now else {
                s.entries[x5c] = nil
                return nil
            }
            return entry.validity.contains(date) ? entry.leafKey : nil
        }
    }

    func store(_ leafKey: ES256PublicKey, for x5c: [String], validity: ClosedRange<Date>) {
        guard capacity > 0 else { return }
        let now = ContinuousClock.now
        state.withLock { s in
            s.entries = s.entries.filter { $0.value.expires > now }
            if s.entries[x5c] == nil, s.entries.count >= capacity,
               let oldest = s.entries.min(by: { $0.value.inserted < $1.value.inserted })?.key {
                s.entries[oldest] = nil
            }
            s.insertions += 1
            s.entries[x5c] = Entry(leafKey: leafKey, validity: validity, expires: now + lifetime, inserted: s.insertions)
        }
    }

    var count: Int { state.withLock { $0.entries.count } }
}

import EmbeddedPostgres
import Postgres
import Synchronization

/// The harness's own way to the data: straight to whichever slot holds the primary now, with
/// short deadlines. The feeder (the web tier) and the checker must keep working through the
/// faults the fleet is tested against, so they never depend on the fleet's failover handling.
final class NemesisDatabase: Sendable {
    let set: PrivateReplicaSet
    let name: String
    private let clients = Mutex<[PrivateReplicaSet.Slot: PostgresClient]>([:])

    init(set: PrivateReplicaSet, name: String) {
        self.set = set
        self.name = name
    }

    /// A client of the current primary.
    var client: PostgresClient { client(set.primary) }

    /// A client of one slot's server, whatever its role.
    func client(_ slot: PrivateReplicaSet.Slot) -> PostgresClient {
        clients.withLock { clients in
            if let client = clients[slot] { return client }
            var configuration = PostgresConfiguration(conninfo: set.directURL(slot: slot, database: name),
                                                      applicationName: "receipt-worker-nemesis")
            configuration.callTimeout = 5
            configuration.connectTimeout = 3
            let client = PostgresClient(configuration: configuration, maxConnections: 4)
            clients[slot] = client
            return client
        }
    }

    /// Forgets the client of a slot that no longer holds the primary (its server was fenced).
    /// Closed on the side: a session to a hung server must not hold up the nemesis.
    func drop(_ slot: PrivateReplicaSet.Slot) async {
        guard let stale = clients.withLock({ $0.removeValue(forKey: slot) }) else { return }
        Task.detached { await stale.close() }
    }

    func close() async {
        for client in clients.withLock({ Array($0.values) }) { await client.close() }
    }
}

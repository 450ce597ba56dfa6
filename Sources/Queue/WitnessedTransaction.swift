import Foundation
import Postgres

/// A transaction that moves money or raises an alert outside a worker's completion (a support
/// credit or resolve, a leader duty). It leaves a commit witness with its COMMIT, so a COMMIT
/// whose reply is lost is resolved on a fresh session before the caller hears anything: it
/// returns only when the transaction committed, and throws the lost connection's error only
/// when the transaction never can commit.
public struct WitnessedTransaction: Sendable {
    let store: QueueStore
    /// How long the outcome of a lost reply is asked for before it is reported unknown.
    let resolveWithin: Duration

    public init(client: PostgresClient, resolveWithin: Duration = .seconds(120)) {
        store = QueueStore(client: client)
        self.resolveWithin = resolveWithin
    }

    public func run<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        let token = UUID()
        do {
            return try await store.client.withConnection { connection in
                try await connection.transaction { connection in
                    let value = try await body(connection)
                    do {
                        _ = try await connection.commit(after: [store.leaveWitnessStatement(token)])
                    } catch let error as PostgresError where error.isConnectionLost {
                        throw LostCommitReply(value: value, underlying: error)
                    }
                    return value
                }
            }
        } catch let lost as LostCommitReply<T> {
            switch try await resolve(token, lost.underlying) {
            case .committed: return lost.value
            case .rolledBack: throw lost.underlying
            }
        }
    }

    /// Asks fresh sessions until the witness answers (a failover may take a while).
    private func resolve(_ token: UUID, _ underlying: PostgresError) async throws -> CommitResolution {
        let deadline = ContinuousClock.now + resolveWithin
        var backoff = 0.1
        while true {
            do {
                return try await store.resolveCommit(witness: token)
            } catch {
                guard ContinuousClock.now < deadline else { throw CommitOutcomeUnknown(underlying: underlying) }
                try await Task.sleep(for: .seconds(backoff))
                backoff = min(backoff * 2, 2)
            }
        }
    }
}

/// The COMMIT went out and no reply came: the body's value, kept for when it did commit.
private struct LostCommitReply<T: Sendable>: Error {
    let value: T
    let underlying: PostgresError
}

/// The database did not say, within the time allowed, whether a change committed.
public struct CommitOutcomeUnknown: Error, CustomStringConvertible {
    public let underlying: PostgresError
    public var description: String {
        "the database did not answer whether the change committed (\(underlying.message)); look it up before trying again"
    }
}

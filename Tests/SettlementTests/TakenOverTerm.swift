import Foundation
import Postgres
@testable import Queue

/// A leader's term that this process still believes it holds while another process has taken
/// the lease over in the database (this one was paused past it, say).
enum TakenOverTerm {
    static func make(_ client: PostgresClient) async throws -> LeaderTerm {
        guard let fence = try await LeaderLeaseStore(client: client).acquireOrRenew(name: Maintenance.leaseName, leaderID: "leader-1", ttl: 60) else {
            throw TakenOverTermError()
        }
        let clock = LeaseClock()
        clock.granted(sentAt: .now, length: .seconds(60), fence: fence)
        guard let term = clock.current() else { throw TakenOverTermError() }
        _ = try await client.query("UPDATE iap.leader SET leader_id = 'leader-2', elected_at = now()")
        return term
    }
}

struct TakenOverTermError: Error {}

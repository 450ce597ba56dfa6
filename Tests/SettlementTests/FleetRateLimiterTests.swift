import AppStore
import Foundation
import HTTP
import Postgres
import Settlement
import TestSupport
import XCTest

/// The fleet limit shared through PostgreSQL: two limiters with their own connections stand for two
/// worker processes. (Scaled down from the 2 × 100 grants at 10/s = 20 s: 2 × 20 grants at
/// 10/s = 4 s, the same schedule; the tolerance is one second.)
final class FleetRateLimiterTests: XCTestCase {
    func testTwoProcessesShareOneRate() async throws {
        let url = try await TestDatabase.fresh()
        let limit = AppStoreRateLimit(perSecond: 10, perHour: 100_000)
        let clients = [PostgresClient(conninfo: url, maxConnections: 4), PostgresClient(conninfo: url, maxConnections: 4)]
        let limiters = clients.map { PostgresRateLimiter(client: $0, limit: limit) }
        let started = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for limiter in limiters {
                group.addTask {
                    for _ in 0..<20 {
                        let decision = try await limiter.acquire(.transactionInfo, maxWait: .seconds(30))
                        XCTAssertEqual(decision, .granted)
                    }
                }
            }
            try await group.waitForAll()
        }
        let elapsed = (ContinuousClock.now - started).seconds
        // 40 grants spaced 0.1 s apart: the last one at 3.9 s.
        XCTAssertEqual(elapsed, 4, accuracy: 1, "40 grants at a shared 10/s")
        for client in clients { await client.close() }
    }

    func testARetryAfterSeenByOneProcessPausesAll() async throws {
        let url = try await TestDatabase.fresh()
        let limit = AppStoreRateLimit(perSecond: 100, perHour: 100_000)
        let one = PostgresClient(conninfo: url, maxConnections: 2), other = PostgresClient(conninfo: url, maxConnections: 2)
        let first = PostgresRateLimiter(client: one, limit: limit), second = PostgresRateLimiter(client: other, limit: limit)
        try await first.pause(.notificationHistory, for: .seconds(3))  // Retry-After: 3 seen by the first process
        let started = ContinuousClock.now
        let granted = try await second.acquire(.notificationHistory, maxWait: .seconds(10))
        XCTAssertEqual(granted, .granted)
        XCTAssertEqual((ContinuousClock.now - started).seconds, 3, accuracy: 0.75, "the second process waited out the pause")
        // Other families are not paused; a caller that will not wait that long is told how long instead.
        let otherFamily = try await second.acquire(.orderLookup, maxWait: .zero)
        XCTAssertEqual(otherFamily, .granted)
        try await first.pause(.consumption, for: .seconds(30))
        guard case .deferred(let wait) = try await second.acquire(.consumption, maxWait: .seconds(1)) else { return XCTFail() }
        XCTAssertEqual(wait.seconds, 30, accuracy: 2)
        await one.close()
        await other.close()
    }

    func testTheHourlyBudgetDefersPastTheHour() async throws {
        let url = try await TestDatabase.fresh()
        let client = PostgresClient(conninfo: url, maxConnections: 2)
        let limiter = PostgresRateLimiter(client: client, limit: AppStoreRateLimit(perSecond: 1000, perHour: 3))
        for _ in 0..<3 {
            let decision = try await limiter.acquire(.orderLookup, maxWait: .seconds(1))
            XCTAssertEqual(decision, .granted)
        }
        guard case .deferred(let wait) = try await limiter.acquire(.orderLookup, maxWait: .seconds(1)) else { return XCTFail() }
        XCTAssertGreaterThan(wait.seconds, 3500)
        await client.close()
    }

    func testTheInMemoryLimiterKeepsTheSameSchedule() async throws {
        let limiter = InMemoryRateLimiter(limit: AppStoreRateLimit(perSecond: 20, perHour: 1000))
        let started = ContinuousClock.now
        for _ in 0..<11 { _ = try await limiter.acquire(.transactionInfo, maxWait: .seconds(5)) }
        XCTAssertEqual((ContinuousClock.now - started).seconds, 0.5, accuracy: 0.3)
        try await limiter.pause(.transactionInfo, for: .seconds(60))
        let decision = try await limiter.acquire(.transactionInfo, maxWait: .seconds(1))
        guard case .deferred = decision else { return XCTFail("\(decision)") }
    }
}

import AppStore
import AppleSim
import Foundation
import HTTP
import Postgres
import Settlement
import TestSupport
import XCTest

/// The fleet limit shared through PostgreSQL: two limiters with their own connections stand for two
/// worker processes: 2 × 20 grants at 10/s = 4 s, short enough for a test; the tolerance is
/// one second.
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

    /// A request that reserved its slot before another process got a 429 must not leave
    /// during the Retry-After when its slot comes: after its wait it looks at the pause again.
    func testASlotReservedBeforeA429WaitsOutThePause() async throws {
        let url = try await TestDatabase.fresh()
        let limit = AppStoreRateLimit(perSecond: 2, perHour: 100_000)
        let one = PostgresClient(conninfo: url, maxConnections: 2), other = PostgresClient(conninfo: url, maxConnections: 2)
        let waiting = PostgresRateLimiter(client: one, limit: limit), throttled = PostgresRateLimiter(client: other, limit: limit)
        let first = try await waiting.acquire(.transactionInfo, maxWait: .seconds(10))
        XCTAssertEqual(first, .granted, "the slot now; the next is 0.5 s away")
        let started = ContinuousClock.now
        async let second = waiting.acquire(.transactionInfo, maxWait: .seconds(10))
        try await Task.sleep(for: .milliseconds(200))
        try await throttled.pause(.transactionInfo, for: .seconds(2))  // the other process got 429, Retry-After 2 s
        let granted = try await second
        XCTAssertEqual(granted, .granted)
        XCTAssertGreaterThanOrEqual((ContinuousClock.now - started).seconds, 2.15, "not at its slot (0.5 s) but after the pause (0.2 + 2 s)")
        await one.close()
        await other.close()
    }

    /// End to end: two processes (two clients, two limiters on one database) send 12 Get
    /// Transaction Info requests at a shared 4/s; apple-sim answers the third with 429 and a 2 s
    /// Retry-After. No request reaches it during those 2 s, and every request succeeds after them.
    func testNoRequestOfAnyProcessReachesAppleDuringRetryAfter() async throws {
        let url = try await TestDatabase.fresh()
        let simulator = AppleSimulator()
        _ = try simulator.start()
        let ids = (1...12).map { "77000000000000\(String(format: "%02d", $0))" }
        for id in ids {
            simulator.serverAPI.register(JWSTransactionPayload(transactionId: id, originalTransactionId: id, bundleId: SettlementFixture.bundleID,
                                                               productId: "coins_100", purchaseDate: Date(), environment: "Production"))
        }
        simulator.serverAPI.inject(.rateLimited(for: .seconds(2), skip: 2, family: .transactionInfo))  // Apple's epoch-ms Retry-After
        let databases = [PostgresClient(conninfo: url, maxConnections: 4), PostgresClient(conninfo: url, maxConnections: 4)]
        let processes = try databases.map { database in
            try AppStoreServerAPIClient(
                configuration: AppStoreServerAPIConfiguration(
                    productionURL: simulator.baseURL, sandboxURL: simulator.baseURL.appendingPathComponent("sandbox"),
                    issuerID: SimServerAPI.defaultIssuerID, keyID: SimServerAPI.defaultKeyID, bundleID: SettlementFixture.bundleID,
                    privateKey: simulator.serverAPI.apiPrivateKey, sandboxFallback: false),
                limiter: PostgresRateLimiter(client: database, limit: AppStoreRateLimit(perSecond: 4, perHour: 100_000)))
        }
        let found = try await withThrowingTaskGroup(of: Bool.self) { group in
            for (index, id) in ids.enumerated() {
                let api = processes[index % 2]
                group.addTask {
                    for _ in 0..<10 {  // as a job would be retried: after Apple's or the fleet's wait
                        switch await api.getTransactionInfo(transactionID: id) {
                        case .found: return true
                        case .retry(_, _, let after): try await Task.sleep(for: after ?? .milliseconds(100))
                        default: return false
                        }
                    }
                    return false
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        XCTAssertEqual(found, 12, "every request succeeded after the pause")
        let reports = simulator.serverAPI.retryAfterReports
        XCTAssertEqual(reports.count, 1)
        XCTAssertEqual(reports.first?.requestsDuringRetryAfter, 0, "no request of either process reached Apple during Retry-After")
        XCTAssertGreaterThanOrEqual(reports.first?.nextRequestAfter ?? 0, 2.0, "the next request came after the Retry-After")
        for database in databases { await database.close() }
        await simulator.shutdown()
    }
}

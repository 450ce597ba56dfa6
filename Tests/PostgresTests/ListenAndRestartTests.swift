import Foundation
import Postgres
import TestSupport
import XCTest

final class ListenAndRestartTests: XCTestCase {
    func testListenReceivesNotifyFromEnqueue() async throws {
        let url = try await TestDatabase.fresh()
        let listener = try PostgresListener(conninfo: url, channels: ["iap_jobs"], pollInterval: 0.05)
        let client = PostgresClient(conninfo: url)
        let inbox = Inbox()
        let reader = Task {
            for await event in listener.events {
                if case .notification(let notification) = event { await inbox.add(notification) }
            }
        }
        // LISTEN registers asynchronously: enqueue until a notification comes back.
        for attempt in 0..<50 where await inbox.items.isEmpty {
            _ = try await client.query("SELECT iap.enqueue_receipt($1, $2, $3)", "u1", "o\(attempt)", "cmVjZWlwdA==")
            try await Task.sleep(for: .milliseconds(100))
        }
        let received = await inbox.items
        XCTAssertEqual(received.first?.channel, "iap_jobs")
        await listener.stop()
        await reader.value
        await client.close()
    }

    func testQueryAfterServerRestartReconnects() async throws {
        guard let cluster = try await TestDatabase.privateCluster() else {
            throw XCTSkip("needs the private cluster (TEST_DATABASE_URL is set)")
        }
        let url = try await TestDatabase.fresh(migrated: false)
        let client = PostgresClient(conninfo: url, maxConnections: 2)
        let before = try await client.query("SELECT pg_backend_pid()")[0].decode(Int.self, at: 0)
        try await cluster.restart()
        let after = try await client.query("SELECT pg_backend_pid()")[0].decode(Int.self, at: 0)
        XCTAssertNotEqual(before, after)
        // A bare connection also heals on its next statement after reporting the loss.
        let connection = try await PostgresConnection.connect(url)
        try await cluster.restart()
        do {
            _ = try await connection.query("SELECT 1")
        } catch let error as PostgresError {
            XCTAssertTrue(error.isConnectionLost, "\(error)")
        }
        let healed = try await connection.query("SELECT 1")[0].decode(Int.self, at: 0)
        XCTAssertEqual(healed, 1)
        await connection.close()
        await client.close()
    }
}

actor Inbox {
    private(set) var items: [PostgresNotification] = []
    func add(_ item: PostgresNotification) { items.append(item) }
}

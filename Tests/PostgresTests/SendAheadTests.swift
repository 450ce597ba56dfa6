import Foundation
import Postgres
import Synchronization
import TestSupport
import XCTest

/// A one-statement transaction whose successor goes out the moment its rows are in
/// (`transaction(…sendingNext:)`, `replyOfSent`): each reply read in turn, each transaction its
/// own, and a session whose sent reply is never read never serves anything else.
final class SendAheadTests: XCTestCase {
    private static let take = "UPDATE counter SET n = n + 1 RETURNING n"

    private func connect(_ url: String, prepared: PostgresConfiguration.PreparedStatements = .on) async throws -> PostgresConnection {
        var configuration = PostgresConfiguration(conninfo: url)
        configuration.preparedStatements = prepared
        let connection = try await PostgresConnection.connect(configuration)
        _ = try await connection.query("DROP TABLE IF EXISTS counter")
        _ = try await connection.query("CREATE TABLE counter (n int NOT NULL)")
        _ = try await connection.query("INSERT INTO counter VALUES (0)")
        return connection
    }

    /// Sends the same statement after each reply until `last` is reached; what went out is tagged
    /// with the number its reply should carry.
    private func sendingUntil(_ last: Int, statement: String = take) -> @Sendable (Int) -> (statement: PostgresStatement, next: Int)? {
        let sent = ManagedCounter()
        return { rows in
            XCTAssertEqual(rows, 1)
            let next = sent.next()
            return next <= last ? (PostgresStatement(statement), next) : nil
        }
    }

    func testEachTransactionSentAheadIsReadInTurnAndCommits() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        for prepared in [PostgresConfiguration.PreparedStatements.on, .off] {
            let connection = try await connect(url, prepared: prepared)
            // Prepared on first use; from then on what follows may go out ahead.
            _ = try await connection.query(Self.take)
            let counter = ManagedCounter(startingAt: 3)
            let next: @Sendable (Int) -> (statement: PostgresStatement, next: Int)? = { _ in
                let value = counter.next()
                return value <= 4 ? (PostgresStatement(Self.take), value) : nil
            }
            var reply = try await connection.transaction(planning: .reused, durability: .unflushed,
                                                         committing: PostgresStatement(Self.take), sendingNext: next)
            var seen = [try reply.rows[0].decode(Int.self, at: 0)]
            var tags: [Int] = []
            while let tag = reply.next {
                tags.append(tag)
                XCTAssertFalse(connection.isReusable, "a reply on its way: the connection serves nothing else")
                reply = try await connection.replyOfSent(sendingNext: next)
                seen.append(try reply.rows[0].decode(Int.self, at: 0))
            }
            XCTAssertEqual(seen, [2, 3, 4], "prepared \(prepared)")
            XCTAssertEqual(tags, [3, 4], "the tag of each transaction sent ahead comes back with the reply that sent it")
            XCTAssertTrue(connection.isReusable)
            let committed = try await connection.query("SELECT n FROM counter")[0].decode(Int.self, at: 0)
            XCTAssertEqual(committed, 4)
            let open = try await connection.query("SELECT count(*) FROM pg_stat_activity WHERE state LIKE 'idle in%'")[0].decode(Int.self, at: 0)
            XCTAssertEqual(open, 0)
            await connection.close()
        }
    }

    func testAStatementNotPreparedYetIsNotSentAhead() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        let connection = try await connect(url)
        _ = try await connection.query(Self.take)
        let reply = try await connection.transaction(committing: PostgresStatement(Self.take),
                                                     sendingNext: sendingUntil(5, statement: "UPDATE counter SET n = n + 10 RETURNING n"))
        XCTAssertEqual(try reply.rows[0].decode(Int.self, at: 0), 2)
        XCTAssertNil(reply.next, "it would need a round trip of its own first")
        XCTAssertTrue(connection.isReusable)
        let committed = try await connection.query("SELECT n FROM counter")[0].decode(Int.self, at: 0)
        XCTAssertEqual(committed, 2)
        await connection.close()
    }

    func testATransactionSentAheadThatFailsRollsBackAndLeavesTheConnectionUsable() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        let connection = try await connect(url)
        let failing = "UPDATE counter SET n = n - 1 RETURNING 1 / n" // divides by zero once n is 0
        _ = try await connection.query("UPDATE counter SET n = 3")
        _ = try await connection.query(failing) // n = 2, and prepared
        let reply = try await connection.transaction(committing: PostgresStatement(failing),
                                                     sendingNext: { _ in (PostgresStatement(failing), "second") })
        XCTAssertEqual(reply.next, "second")
        XCTAssertEqual(try reply.rows[0].decode(Int.self, at: 0), 1, "1 / 0 is the one sent ahead's")
        do {
            _ = try await connection.replyOfSent(sendingNext: { _ -> (statement: PostgresStatement, next: String)? in nil })
            XCTFail("expected a division by zero")
        } catch let error as PostgresError {
            XCTAssertEqual(error.sqlState, "22012", "\(error)")
        }
        XCTAssertTrue(connection.isReusable, "rolled back, outside any transaction")
        let committed = try await connection.query("SELECT n FROM counter")[0].decode(Int.self, at: 0)
        XCTAssertEqual(committed, 1, "the first committed, the second rolled back")
        await connection.close()
    }

    func testAReplyNeverReadClosesTheSessionForAnyOtherCallAndThePoolDropsIt() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        let connection = try await connect(url)
        _ = try await connection.query(Self.take)
        let reply = try await connection.transaction(committing: PostgresStatement(Self.take), sendingNext: sendingUntil(1))
        XCTAssertNotNil(reply.next)
        do {
            _ = try await connection.query("SELECT 1")
            XCTFail("the sent transaction's reply would have been read as this statement's")
        } catch let error as PostgresError {
            XCTAssertTrue(error.isConnectionLost, "\(error)")
        }
        let answer = try await connection.query("SELECT 41 + 1")[0].decode(Int.self, at: 0)
        XCTAssertEqual(answer, 42, "a new session")
        do {
            _ = try await connection.replyOfSent(sendingNext: { _ -> (statement: PostgresStatement, next: Int)? in nil })
            XCTFail("nothing was sent ahead on this session")
        } catch let error as PostgresError {
            XCTAssertFalse(error.isConnectionLost, "\(error)")
        }
        await connection.close()

        let client = PostgresClient(conninfo: url, maxConnections: 1)
        _ = try await client.query(Self.take)
        let broken = client.brokenConnectionCount
        let sent = try await client.withConnection { connection in
            try await connection.transaction(committing: PostgresStatement(Self.take), sendingNext: sendingUntil(1)).next
        }
        XCTAssertNotNil(sent)
        XCTAssertEqual(client.brokenConnectionCount, broken + 1, "given back with a reply unread: dropped as broken")
        let rows = try await client.query("SELECT n FROM counter")
        XCTAssertEqual(rows.count, 1)
        await client.close()
    }
}

/// A counter the closures handed to the connection's thread can share.
private final class ManagedCounter: Sendable {
    private let value: Mutex<Int>

    init(startingAt value: Int = 1) { self.value = Mutex(value - 1) }

    func next() -> Int {
        value.withLock {
            $0 += 1
            return $0
        }
    }
}

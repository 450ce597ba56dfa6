@testable import EmbeddedPostgres
import Foundation
import Postgres
import TestSupport
import XCTest

/// The fault proxy loses a COMMIT reply: the server commits, the client's connection is reset
/// right before the `CommandComplete "COMMIT"` reaches it; everything else passes untouched.
final class CommitReplyCutTests: XCTestCase {
    /// A backend stream: the refusal of an SSLRequest, authentication, a result of a SELECT
    /// whose value is the word COMMIT, an INSERT, then the COMMIT and its ReadyForQuery.
    private func message(_ type: Character, _ payload: [UInt8]) -> [UInt8] {
        let length = UInt32(payload.count + 4)
        return [UInt8(ascii: type.unicodeScalars.first!)] + withUnsafeBytes(of: length.bigEndian, Array.init) + payload
    }

    private func tag(_ text: String) -> [UInt8] { Array(text.utf8) + [0] }

    func testTheScannerStopsRightBeforeTheCommitReplyHoweverTheStreamIsSplit() {
        let beforeCommit = [UInt8(ascii: "N")] + message("R", [0, 0, 0, 0]) + message("Z", [UInt8(ascii: "I")])
            + message("D", [0, 1, 0, 0, 0, 6] + Array("COMMIT".utf8)) + message("C", tag("SELECT 1"))
            + message("C", tag("INSERT 0 1")) + message("C", tag("BEGIN"))
        let stream = beforeCommit + message("C", tag("COMMIT")) + message("Z", [UInt8(ascii: "I")])
        for first in 0...stream.count {
            for second in first...stream.count {
                let (forwarded, cut) = relay(stream, splitAt: [first, second], cutting: true)
                XCTAssertTrue(cut, "split at \(first), \(second)")
                XCTAssertEqual(forwarded, beforeCommit, "split at \(first), \(second)")
                let (all, none) = relay(stream, splitAt: [first, second], cutting: false)
                XCTAssertFalse(none)
                XCTAssertEqual(all, stream, "split at \(first), \(second): nothing held back for good")
            }
        }
    }

    /// What the proxy's relay does with the reads: forward what the scanner lets through, hold back the rest.
    private func relay(_ stream: [UInt8], splitAt points: [Int], cutting: Bool) -> (forwarded: [UInt8], cut: Bool) {
        var scanner = BackendMessageScanner()
        var forwarded: [UInt8] = []
        var held: [UInt8] = []
        var start = 0
        for end in points + [stream.count] {
            let bytes = held + stream[start..<end]
            start = end
            let (forward, cut) = scanner.scan(bytes, count: bytes.count) { cutting }
            forwarded += bytes[0..<forward]
            if cut { return (forwarded, true) }
            held = Array(bytes[forward...])
        }
        return (forwarded + held, false)
    }

    func testACutCommitReplyLeavesTheTransactionCommittedAndTheClientDisconnected() async throws {
        let url = try await TestDatabase.fresh(migrated: false)
        let observer = PostgresClient(conninfo: url, maxConnections: 1)
        let proxy = try FaultProxy(targetPort: try XCTUnwrap(URLComponents(string: url)?.port))
        defer { proxy.stop() }
        _ = try await observer.query("CREATE TABLE cut_probe (n int)")

        let client = try await PostgresConnection.connect(proxy.url(replacingIn: url))
        proxy.cutCommitReplies(1)
        // Neither a value that reads COMMIT nor a statement's own completion is a COMMIT reply.
        let word = try await client.query("SELECT 'COMMIT'::text")[0].decode(String.self, at: 0)
        XCTAssertEqual(word, "COMMIT")
        _ = try await client.query("INSERT INTO cut_probe VALUES (1)")
        _ = try await client.query("BEGIN")
        _ = try await client.query("INSERT INTO cut_probe VALUES (2)")
        do {
            _ = try await client.query("COMMIT")
            XCTFail("the COMMIT reply arrived")
        } catch {}
        XCTAssertEqual(proxy.commitRepliesCut, 1)
        let committed = try await observer.query("SELECT array_agg(n ORDER BY n) FROM cut_probe")[0].decode([Int].self, at: 0)
        XCTAssertEqual(committed, [1, 2], "the transaction whose reply was cut committed")
        await client.close()

        // One cut was asked for: the next COMMIT reply arrives.
        let next = try await PostgresConnection.connect(proxy.url(replacingIn: url))
        _ = try await next.query("BEGIN")
        _ = try await next.query("INSERT INTO cut_probe VALUES (3)")
        _ = try await next.query("COMMIT")
        XCTAssertEqual(proxy.commitRepliesCut, 1)
        await next.close()
        await observer.close()
    }
}
